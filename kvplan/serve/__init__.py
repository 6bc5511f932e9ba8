"""Reading ``vllm serve`` lines: the pasted text (``line``), vLLM's argument rules (``args``),
what each flag does to the KV cache (``effects``) and the mapping onto kvplan's options
(``reader``). Pure: no engine runs here; ``kvplan.usecases.serve`` simulates the result."""

from kvplan.serve.line import ServeLine, parse_line, read_text
from kvplan.serve.reader import ServeRequest, read_serve

__all__ = ["ServeLine", "ServeRequest", "parse_line", "read_serve", "read_text"]
