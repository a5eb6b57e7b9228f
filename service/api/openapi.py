"""OpenAPI for the routes that read their body themselves (JSON or ``text/plain``).

Those routes declare their request body here: the JSON schema of the operation's input model,
with an example, and the ``text/plain`` alternative whose options are query parameters.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from service.api.schemas import EXAMPLE_HLO, MODULE_INPUTS
from service.pipeline import NEEDS_TARGET, Operation

_REF = "#/components/schemas/{model}"


def _option_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(ref_template=_REF)
    defs = schema.get("$defs", {})

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in node:
            return resolve(defs[node["$ref"].rsplit("/", 1)[-1]])
        if "items" in node:
            node = {**node, "items": resolve(node["items"])}
        return node

    options = resolve(schema["properties"]["options"])
    params: list[dict[str, Any]] = [
        {"name": "name", "in": "query", "required": False, "schema": {"type": "string"},
         "description": "text/plain bodies only: name used in diagnostics."},
    ]
    if "target" in schema["properties"]:
        params.append(
            {"name": "target", "in": "query", "required": False, "schema": {"type": "string"},
             "description": "text/plain bodies only: built-in target name (required)."}
        )
    for key, prop in options.get("properties", {}).items():
        prop = resolve(prop)
        # An optional option: a query parameter is either given or left out, never null.
        alternatives = [p for p in prop.get("anyOf", ()) if p.get("type") != "null"]
        if len(alternatives) == 1:
            extra = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
            prop = {**resolve(alternatives[0]), **extra}
        param: dict[str, Any] = {
            "name": key, "in": "query", "required": False, "schema": prop,
            "description": "text/plain bodies only: option of the operation.",
        }
        if prop.get("type") == "array":
            param["style"], param["explode"] = "form", True
        params.append(param)
    return params


def module_body(operation: Operation) -> dict[str, Any]:
    """``openapi_extra`` of a single-module route."""
    model = MODULE_INPUTS[operation]
    example: dict[str, Any] = {"hlo": EXAMPLE_HLO}
    if operation in NEEDS_TARGET:
        example["target"] = "tpu"
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {"$ref": _REF.format(model=model.__name__)},
                    "example": example,
                },
                "text/plain": {"schema": {"type": "string"}, "example": EXAMPLE_HLO},
            },
        },
        "parameters": _option_parameters(model),
    }


def install_openapi(app: FastAPI) -> None:
    """Generate the schema once, adding the input models the custom bodies refer to."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description,
                routes=app.routes,
            )
            _, extra = models_json_schema(
                [(m, "validation") for m in MODULE_INPUTS.values()], ref_template=_REF
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, value in extra.get("$defs", {}).items():
                components.setdefault(name, value)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
