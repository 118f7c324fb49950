"""VOXMessage as documented: a frozen pydantic model with UUID-typed identity fields."""

from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field


class VOXMessage(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True)

    message_id: UUID
    message_source: str
    emitted_at: str
    source: UUID
    target: UUID
    type: str
    details: dict = Field(default_factory=dict)
    reply_to: UUID | None = None
