"""Why an upload is refused, or a document not found. A refused upload stores nothing."""

from api.errors import AppError, NotFound


class DocumentNotFound(NotFound):
    code = "document_not_found"


class DocumentBusy(AppError):
    """The same file's document was being replaced by other uploads throughout."""

    status_code = 409
    code = "document_busy"


class DocumentRefused(AppError):
    """A file the service will not take: each reason has its own code."""

    status_code = 400
    code = "document_refused"
    public = True


class DocumentEmpty(DocumentRefused):
    code = "document_empty"


class DocumentTooLarge(DocumentRefused):
    status_code = 413
    code = "document_too_large"


class UnsupportedDocumentType(DocumentRefused):
    status_code = 415
    code = "unsupported_document_type"


class DocumentUnreadable(DocumentRefused):
    code = "document_unreadable"


class DocumentEncrypted(DocumentRefused):
    code = "document_encrypted"


class DocumentHasNoText(DocumentRefused):
    code = "document_has_no_text"


class DocumentTooManyPages(DocumentRefused):
    code = "document_too_many_pages"


class DocumentTooManyPassages(DocumentRefused):
    code = "document_too_many_passages"
