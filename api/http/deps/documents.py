"""DocumentsDep: the process's document processor (uploads are queued through it)."""

from typing import Annotated

from fastapi import Depends, Request

from api.documents.processing import DocumentProcessor


async def get_documents(request: Request) -> DocumentProcessor:
    processor: DocumentProcessor = request.state.documents
    return processor


DocumentsDep = Annotated[DocumentProcessor, Depends(get_documents)]
