"""The event protocol: envelope, one model per kind, canonical JSON and hashing. No I/O."""

from app.events.actions import FileEdit, FileRead, FileWrite, Finish, McpCall, Run, Think
from app.events.annotation import Annotation
from app.events.base import MAX_SEQ, Action, Event, Observation, Service, Source
from app.events.canonical import CanonicalJsonError, canonical_json, chain_hash, hashed_document
from app.events.conversation import AgentState, Condensation, Message
from app.events.evaluation import EvalScore
from app.events.ids import new_event_id
from app.events.imported import ImportedAction, ImportedOutput
from app.events.lifecycle import RuntimeRestarted, RuntimeStatus, SessionClosed, SessionCreated
from app.events.llm import LlmCall, LlmResponse, LlmUsage, ToolCall
from app.events.observations import (
    ErrorObservation,
    FileEditOutput,
    FileReadOutput,
    FileWriteOutput,
    McpResult,
    RunOutput,
)
from app.events.origin import ImportOrigin
from app.events.registry import (
    ACTION_KINDS,
    AWAITED_KINDS,
    EVENT_TYPES,
    HANDLED_KINDS,
    OBSERVATION_KINDS,
    REMARK_KINDS,
    InvalidEventError,
    event_from_stored,
    parse_event,
)
from app.events.replay import ReplayResultEvent
from app.events.traces import OtelSpan
from app.events.workspace import SkippedFile, WorkspaceDiff, WorkspaceFile, WorkspaceSnapshot

__all__ = [
    "ACTION_KINDS",
    "AWAITED_KINDS",
    "EVENT_TYPES",
    "HANDLED_KINDS",
    "MAX_SEQ",
    "OBSERVATION_KINDS",
    "REMARK_KINDS",
    "Action",
    "AgentState",
    "Annotation",
    "CanonicalJsonError",
    "Condensation",
    "ErrorObservation",
    "EvalScore",
    "Event",
    "FileEdit",
    "FileEditOutput",
    "FileRead",
    "FileReadOutput",
    "FileWrite",
    "FileWriteOutput",
    "Finish",
    "ImportOrigin",
    "ImportedAction",
    "ImportedOutput",
    "InvalidEventError",
    "LlmCall",
    "LlmResponse",
    "LlmUsage",
    "McpCall",
    "McpResult",
    "Message",
    "Observation",
    "OtelSpan",
    "ReplayResultEvent",
    "Run",
    "RunOutput",
    "RuntimeRestarted",
    "RuntimeStatus",
    "Service",
    "SessionClosed",
    "SessionCreated",
    "SkippedFile",
    "Source",
    "Think",
    "ToolCall",
    "WorkspaceDiff",
    "WorkspaceFile",
    "WorkspaceSnapshot",
    "canonical_json",
    "chain_hash",
    "event_from_stored",
    "hashed_document",
    "new_event_id",
    "parse_event",
]
