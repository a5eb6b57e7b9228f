"""The HTTP API: application pieces, request/response schemas and routers."""
