"""Why the memory domain refuses a request. Messages are written for whoever asked, a person
over REST or the model through a tool, so the tools reply with them as they are."""

from collections.abc import Sequence

from api.errors import AppError


class MemoryRefused(AppError):
    """Base of the refusals a memory tool turns into a reply instead of an exception."""

    status_code = 400
    code = "memory_refused"
    public = True


class InvalidBlockName(MemoryRefused):
    code = "invalid_block_name"

    def __init__(self, name: str) -> None:
        super().__init__(
            f'"{name}" is not a valid block name: use letters, digits and underscores, '
            "e.g. human, persona or projects."
        )


class BlockNotFound(MemoryRefused):
    status_code = 404
    code = "block_not_found"

    def __init__(self, block: str, available: Sequence[str]) -> None:
        known = ", ".join(available) if available else "none"
        super().__init__(
            f"Block [{block}] does not exist. Available blocks: {known}.",
            block=block,
            available=list(available),
        )
        self.block = block


class BlockExists(MemoryRefused):
    status_code = 409
    code = "block_exists"

    def __init__(self, block: str) -> None:
        super().__init__(f"Block [{block}] already exists.", block=block)


class DefaultBlockProtected(MemoryRefused):
    status_code = 409
    code = "default_block_protected"

    def __init__(self, block: str) -> None:
        super().__init__(f"Block [{block}] is a default block and cannot be deleted.")


class InvalidWordLimit(MemoryRefused):
    code = "invalid_word_limit"

    def __init__(self, word_limit: int, maximum: int) -> None:
        super().__init__(f"A word limit must be between 1 and {maximum}, not {word_limit}.")


class InvalidCharLimit(MemoryRefused):
    code = "invalid_char_limit"

    def __init__(self, char_limit: int, maximum: int) -> None:
        super().__init__(f"A character limit must be between 1 and {maximum}, not {char_limit}.")


class EmptyContent(MemoryRefused):
    code = "empty_content"


class ContentTooLong(MemoryRefused):
    code = "content_too_long"


class LineOutOfRange(MemoryRefused):
    code = "line_out_of_range"

    def __init__(self, block: str, line_number: int, line_count: int) -> None:
        hint = (
            "the block is empty" if line_count == 0 else f"{_lines(line_count)}; use 1-{line_count}"
        )
        super().__init__(
            f"Line {line_number} does not exist in [{block}] ({hint}).",
            block=block,
            line_number=line_number,
            line_count=line_count,
        )


class DuplicateLine(MemoryRefused):
    status_code = 409
    code = "duplicate_line"

    def __init__(self, block: str, line_number: int, line: str) -> None:
        super().__init__(
            f'Line already exists in [{block}] at line {line_number}: "{line}" (no change)',
            block=block,
            line_number=line_number,
        )


class BlockFull(MemoryRefused):
    status_code = 409
    code = "block_full"

    def __init__(self, block: str, words: int, word_limit: int, *, action: str) -> None:
        super().__init__(
            f"Cannot {action} [{block}]: it would hold {words}/{word_limit} words. Consolidate "
            "lines or move details to archival memory first (no change).",
            block=block,
            words=words,
            word_limit=word_limit,
        )


class BlockTooLarge(MemoryRefused):
    status_code = 409
    code = "block_too_large"

    def __init__(self, block: str, chars: int, maximum: int, *, action: str) -> None:
        super().__init__(
            f"Cannot {action} [{block}]: it would hold {chars} characters (at most {maximum}). "
            "Move details to archival memory first (no change)."
        )


class ArchivalMemoryNotFound(MemoryRefused):
    status_code = 404
    code = "archival_memory_not_found"

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"Archival memory {memory_id} does not exist.")


class AlreadySuperseded(MemoryRefused):
    """Another write replaced the memory first: one replacement per memory."""

    status_code = 409
    code = "already_superseded"

    def __init__(self, memory_id: str, by: str | None) -> None:
        super().__init__(
            f"Archival memory {memory_id} was already replaced by {by} (no change).",
            memory_id=memory_id,
            superseded_by=by,
        )


class InvalidSupersession(MemoryRefused):
    """A replacement that would make no sense: a memory replacing itself, or one that is
    no longer current (the chain of replacements would loop or branch)."""

    status_code = 409
    code = "invalid_supersession"


class MemoryBusy(MemoryRefused):
    """Optimistic retries ran out: so many writers at once that this one never got a turn."""

    status_code = 503
    code = "memory_busy"


def _lines(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


class InvalidPage(MemoryRefused):
    code = "invalid_page"

    def __init__(self, page: int) -> None:
        super().__init__(f"Page must be 1 or more, not {page}.")


class VersionMismatch(MemoryRefused):
    """A write made on a version of the block that is no longer the current one (If-Match)."""

    status_code = 412
    code = "version_mismatch"

    def __init__(self, block: str, current: int) -> None:
        super().__init__(
            f"[{block}] has changed since you read it: it is at version {current} now. Read "
            "it again and redo your change on what is there (no change).",
            block=block,
            current_version=current,
        )
        self.current = current

    def headers(self) -> dict[str, str]:
        return {"ETag": etag(self.current)}


def etag(version: int) -> str:
    """A block's version as an HTTP entity tag."""
    return f'"{version}"'


class RestoreWindowPassed(MemoryRefused):
    """No deleted copy to restore: the memory was never deleted here, or its window passed
    (after it, a deleted memory is gone for good)."""

    status_code = 404
    code = "restore_window_passed"

    def __init__(self, memory_id: str) -> None:
        super().__init__(
            f"Archival memory {memory_id} cannot be restored: it was not deleted within its "
            "undo window, which has passed (or it never existed).",
            memory_id=memory_id,
        )


class RestoreConflict(MemoryRefused):
    """The deleted memory's text was stored again meanwhile, as another memory: restoring
    would keep the same text twice."""

    status_code = 409
    code = "archival_text_stored_again"

    def __init__(self, memory_id: str, existing: str) -> None:
        super().__init__(
            f"Archival memory {memory_id} cannot be restored: the same text was stored again "
            f"meanwhile as {existing}, which stays (no change).",
            memory_id=memory_id,
            existing_memory_id=existing,
        )


class VersionNotFound(MemoryRefused):
    status_code = 404
    code = "version_not_found"

    def __init__(self, block: str, version: int, current: int) -> None:
        super().__init__(
            f"[{block}] has no version {version}: its versions run from 1 to {current}.",
            block=block,
            version=version,
            current_version=current,
        )


class HistoryIncomplete(MemoryRefused):
    """A restore that would have to undo a change the history cannot undo exactly."""

    status_code = 409
    code = "history_incomplete"

    def __init__(self, block: str, version: int, reason: str) -> None:
        super().__init__(
            f"Version {version} of [{block}] cannot be rebuilt: {reason} (no change).",
            block=block,
            version=version,
        )
