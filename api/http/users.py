from api.http.deps.auth import CurrentUser
from api.http.route_filter import Router
from api.users.schemas import UserOut

router = Router(prefix="/users", tags=["users"])


@router.get("/me", operation_id="users_me")
async def me(user: CurrentUser) -> UserOut:
    """The signed-in user (in local mode, the local user)."""
    return UserOut.of(user)
