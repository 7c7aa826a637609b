"""The flat names of nested settings: ``CHRONICLE_LLM_TEMPERATURE`` and a TOML ``llm_temperature``
reach ``settings.llm.temperature``.

Each setting is declared once, as a field of its component's config (``LlmSettings``,
``StoreConfig``, ``DockerConfig``, ...); ``Settings`` holds those configs as fields marked
``Flat``, which says how their fields are named flat: a prefix and the field's name, unless
renamed. The table of flat names is derived from the models, never written out, so a field
added to a component is a setting at once. A flat name may feed several fields (the one
``sandbox_network`` sets the local and the Docker sandbox's); the nested forms (a TOML
``[llm]`` table, ``Settings(llm=...)``) name one field each.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource

#: Where a setting sits: ``("llm", "temperature")``, ``("runtime", "local", "limits", "processes")``
FieldPath = tuple[str, ...]


@dataclass(frozen=True)
class Flat:
    """Marks a field of ``Settings`` as a group of settings (a component's config) and says
    how its fields are named flat: ``prefix`` + the field's name, unless ``renamed`` (dotted
    path inside the group -> flat name). ``within`` names the sub-configs whose fields are
    settings too (named by their own name, without the sub-config's); ``omitted`` the fields
    that are no settings (the settings compute them when they build the config)."""

    prefix: str = ""
    renamed: tuple[tuple[str, str], ...] = ()
    within: tuple[str, ...] = ()
    omitted: tuple[str, ...] = ()

    @classmethod
    def named(
        cls,
        prefix: str = "",
        renamed: Mapping[str, str] | None = None,
        within: tuple[str, ...] = (),
        omitted: tuple[str, ...] = (),
    ) -> Flat:
        return cls(prefix, tuple((renamed or {}).items()), within, omitted)


@dataclass(frozen=True)
class FlatNames:
    """The flat names of one settings class: each to the fields it sets, and their types."""

    paths: Mapping[str, tuple[FieldPath, ...]]
    fields: Mapping[str, FieldInfo] = field(repr=False)
    """The field a flat name is read as (its first path's): its type tells how the
    environment's text is decoded (JSON for a table, as is for a list marked NoDecode)."""
    groups: Mapping[str, type[BaseModel]] = field(repr=False)
    top: tuple[str, ...] = ()
    """The settings that sit at the top, named as they are (``data_dir``)."""

    @property
    def every(self) -> tuple[str, ...]:
        """Every setting's flat name: its env name without ``CHRONICLE_``, its TOML key."""
        return (*self.top, *self.paths)

    @classmethod
    def of(cls, settings: type[BaseModel]) -> FlatNames:
        paths: dict[str, list[FieldPath]] = defaultdict(list)
        fields: dict[str, FieldInfo] = {}
        groups: dict[str, type[BaseModel]] = {}
        top: list[str] = []
        for name, info in settings.model_fields.items():
            marker = next((m for m in info.metadata if isinstance(m, Flat)), None)
            if marker is None:
                top.append(name)
                continue
            model = info.annotation
            assert isinstance(model, type) and issubclass(model, BaseModel), name
            groups[name] = model
            renamed = dict(marker.renamed)
            for path, leaf in _leaves(model, (), marker):
                dotted = ".".join(path)
                flat = renamed.get(dotted, marker.prefix + path[-1])
                paths[flat].append((name, *path))
                fields.setdefault(flat, leaf)
        return cls({k: tuple(v) for k, v in paths.items()}, fields, groups, tuple(top))

    def location(self, loc: tuple[int | str, ...]) -> str:
        """A validation error's location as the user names it: ``("llm", "temperature")`` is
        ``llm_temperature`` (also ``CHRONICLE_LLM_TEMPERATURE`` and the ``[llm]`` table's
        ``temperature``); the rest of the location, if any, follows after dots."""
        for end in range(len(loc), 0, -1):
            prefix = tuple(str(part) for part in loc[:end])
            for flat, paths in self.paths.items():
                if prefix in paths:
                    return ".".join([flat, *(str(part) for part in loc[end:])])
        return ".".join(str(part) for part in loc)

    def nest(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Flat names (``llm_temperature``) put in their groups' tables (``{"llm":
        {"temperature": ...}}``), merged with tables given as such; other keys kept as they are
        (a top-level setting, or an unknown name, which validation then refuses)."""
        nested: dict[str, Any] = {}
        for key, value in values.items():
            paths = self.paths.get(key)
            if paths is None or (key in self.groups and isinstance(value, Mapping | BaseModel)):
                _merge(nested, (key,), value)
            else:
                for path in paths:
                    _merge(nested, path, value)
        return nested

    def updated(self, model: BaseModel, changes: Mapping[str, Any]) -> BaseModel:
        """``model`` (a group's config) with ``changes`` (a nested table), copied as
        ``model_copy`` copies (unvalidated, so a test may set what a file may not); a name that
        is no field is an error, where ``model_copy`` would set it silently."""
        update: dict[str, Any] = {}
        for key, value in changes.items():
            if key not in type(model).model_fields:
                raise ValueError(f"{type(model).__name__} has no setting {key}")
            current = getattr(model, key)
            nested = isinstance(value, Mapping) and isinstance(current, BaseModel)
            update[key] = self.updated(current, value) if nested else value
        return model.model_copy(update=update)


def _leaves(
    model: type[BaseModel], path: FieldPath, marker: Flat
) -> Iterator[tuple[FieldPath, FieldInfo]]:
    for name, info in model.model_fields.items():
        here = (*path, name)
        dotted = ".".join(here)
        if dotted in marker.omitted:
            continue
        if dotted in marker.within:
            inner = info.annotation
            assert isinstance(inner, type) and issubclass(inner, BaseModel), dotted
            yield from _leaves(inner, here, marker)
        else:
            yield here, info


def _as_table(value: Any) -> Any:
    """A config as the table that makes it again (the fields it was given), tables as copies."""
    if isinstance(value, BaseModel):
        return {name: _as_table(getattr(value, name)) for name in value.model_fields_set}
    if isinstance(value, Mapping):
        return {key: _as_table(inner) for key, inner in value.items()}
    return value


def _merge(into: dict[str, Any], path: FieldPath, value: Any) -> None:
    """Put ``value`` at ``path`` in ``into``; a table (or config) given where one is already
    merges into it key by key, so a flat name and its group's table both count."""
    if not path:
        for key, inner in _as_table(value).items():
            _merge(into, (key,), inner)
        return
    node = into
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = _as_table(node[key]) if isinstance(node.get(key), BaseModel) else {}
        node = node[key]
    last = path[-1]
    if isinstance(value, Mapping | BaseModel) and isinstance(node.get(last), Mapping | BaseModel):
        node[last] = _as_table(node[last])
        _merge(node[last], (), value)
    else:
        node[last] = _as_table(value) if isinstance(value, Mapping) else value


class NestedSource(PydanticBaseSettingsSource):
    """Another source's values with their flat names nested (the TOML file, the arguments)."""

    def __init__(self, settings_cls: type[BaseSettings], source: PydanticBaseSettingsSource):
        super().__init__(settings_cls)
        self.source = source
        self.names = FlatNames.of(settings_cls)

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # never asked: __call__ answers for the whole source

    def __call__(self) -> dict[str, Any]:
        return self.names.nest(self.source())


class FlatEnvSource(EnvSettingsSource):
    """``CHRONICLE_<FLAT NAME>`` for every flat name and top-level setting, decoded by the
    type of the field it sets (as pydantic-settings decodes a field of its own), nested."""

    def __call__(self) -> dict[str, Any]:
        names = FlatNames.of(self.settings_cls)
        top = self.settings_cls.model_fields
        readable = {**{name: top[name] for name in names.top}, **names.fields}
        found: dict[str, Any] = {}
        for name, info in readable.items():
            value, _, is_complex = self.get_field_value(info, name)
            value = self.prepare_field_value(name, info, value, is_complex)
            if value is not None:
                found[name] = value
        return names.nest(found)
