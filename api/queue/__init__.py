"""PORT: the queue of memory runs to do (seed 004). It carries only which run of which
subject is next; the runs themselves live in the table (api/memory_runs/)."""

from api.queue.base import Delivery, RunQueue
from api.queue.factory import get_queue

__all__ = ["Delivery", "RunQueue", "get_queue"]
