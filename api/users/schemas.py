from api.kit.model import ApiModel
from api.users.models import User


class UserOut(ApiModel):
    email: str
    name: str
    picture: str | None

    @classmethod
    def of(cls, user: User) -> "UserOut":
        return cls(email=user.email, name=user.name, picture=user.picture)
