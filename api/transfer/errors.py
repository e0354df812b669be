from api.errors import AppError, BadRequest


class InvalidImportFile(BadRequest):
    """The file is not one we can import as a whole: nothing of it was written."""

    code = "invalid_import_file"


class ImportTooLarge(AppError):
    status_code = 413
    code = "import_too_large"
