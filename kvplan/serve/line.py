"""A pasted deployment line → the arguments vLLM's serve parser receives.

Accepted forms (each may follow ``VAR=value`` prefixes, ``env VAR=value``, ``export VAR=value;``
or ``sudo``):

* ``vllm serve MODEL [flags]``;
* ``python -m vllm.entrypoints.openai.api_server --model MODEL [flags]``;
* ``docker run [docker options] vllm/vllm-openai:TAG [MODEL] [flags]`` (also ``podman``):
  ``-e VAR=value`` / ``--env VAR=value`` are environment variables, the image tag names the
  release (``v0.18.0`` → ``0.18.0``).

``read_text`` takes the text as people paste it: CRLF line ends, a shell prompt before a
command (``$ ``, ``# ``, ``user@host:~$ ``, ``(venv) $ ``), backslash continuations with spaces
after the backslash, redirections (``> log 2>&1``, ``&>>log``, ``< in``), then joins the
continued lines as a shell does. The tokens drop ``#`` comments; the command that runs vLLM
is picked when the text holds several (``export X=1 && vllm serve ... | tee log &``).
"""

from __future__ import annotations

import re
import shlex
from typing import Literal
from dataclasses import dataclass, field

from kvplan.errors import OptionError

API_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
_ENV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_SEPARATORS = (";", "&&", "||", "|", "&", "\n")
_TAG_RE = re.compile(r"^v?(?P<release>\d+\.\d+\.\d+(?:\.\d+)?)(?P<rest>(?:rc\d+|\.?post\d+|\.?dev\d*|[-+._]).*)?$")

# docker/podman run options that take no value (everything else starting with '-' takes one
# unless written --opt=value); short flags may be combined (-it, -dit).
_DOCKER_BOOL = frozenset({
    "--rm", "--detach", "--interactive", "--tty", "--privileged", "--init", "--read-only", "--sig-proxy",
    "--no-healthcheck", "--oom-kill-disable", "--publish-all", "--disable-content-trust", "--quiet",
    "--replace", "--help",
})
_DOCKER_SHORT_BOOL = frozenset("ditPq")


# how the line runs vLLM: `vllm serve`, the API server module, or `docker run` (a manifest's container too)
LineForm = Literal["vllm serve", "api_server", "docker"]


@dataclass(frozen=True)
class ServeLine:
    form: LineForm
    argv: tuple[str, ...]  # what follows `vllm serve` (or the api_server module, or the image)
    env: dict = field(default_factory=dict)  # VAR=value from the line, in order (every name)
    image: str | None = None
    image_tag: str | None = None
    image_release: str | None = None  # "0.18.0" from "v0.18.0"; None for latest/nightly/none
    text: str = ""


# a prompt before a command: `$ `, `% `, `user@host:~/dir$ `, `(venv) $ `, `[root@h ~]# `, a path alone
# (`~/dir $ `), PowerShell's `PS C:\dir> ` and cmd.exe's `C:\dir>`; `# ` and `> ` only when a command follows
# (else a comment, or a quoted e-mail line)
_PROMPT_RE = re.compile(r"^[ \t]*(?:\([^()\s]+\)[ \t]*)?(?:\[[^\]\s]*(?:\s[^\]]*)?\]|[\w.-]+@[\w.-]+(?::\S*)?"
                        r"|(?:PS )?[A-Za-z]:\\[^>\n]*|~[^\s$#%>]*[ \t]?)?"
                        r"(?P<sign>[$%#>])(?:[ \t]+|(?<=>)(?=\S))")  # cmd.exe writes no space after its '>'

_COMMAND_START = re.compile(r"(?:sudo|env|export|nohup|exec|time|uv|vllm|docker|podman|nerdctl|python[\d.]*|"
                            r"[A-Za-z_][A-Za-z0-9_]*=|\S*/(?:python[\d.]*|vllm))(?:\s|$)")


def _strip_prompt(line: str) -> str:
    m = _PROMPT_RE.match(line)
    if m is None:
        return line
    rest = line[m.end():]
    if m.group("sign") in "#>" and not _COMMAND_START.match(rest):
        return line  # a comment (or a quoted e-mail line), not a prompt
    return rest


def _drop_redirections(text: str) -> str:
    """Shell redirections outside quotes (``> log``, ``2>&1``, ``&>> f``, ``>| f``, ``< in``) removed:
    they send vLLM's output somewhere and change nothing it reads."""
    out: list[str] = []
    i, n, quote = 0, len(text), None
    while i < n:
        ch = text[i]
        if quote:
            out.append(ch)
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"' and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            i += 1
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "\\" and i + 1 < n:
            out += [ch, text[i + 1]]
            i += 2
            continue
        elif ch in "<>" or (ch == "&" and text[i + 1:i + 2] == ">"):
            # an fd number right before the operator (2>) belongs to it
            while out and out[-1].isdigit() and (len(out) < 2 or out[-2] in " \t\n"):
                out.pop()
            j = i + 1
            while j < n and text[j] in "<>&|":
                j += 1
            op = text[i:j]
            if op.endswith("&") and j < n and (text[j].isdigit() or text[j] == "-"):  # 2>&1, >&-
                j += 1
                while j < n and text[j].isdigit():
                    j += 1
            else:  # the target word
                while j < n and text[j] in " \t":
                    j += 1
                while j < n and text[j] not in " \t\n;&|":
                    j += 1
            out.append(" ")
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _continued(line: str, quote: str | None) -> tuple[str, bool, str | None]:
    r"""``(the line without its continuation mark, whether the next line continues it, the quote
    still open at its end)``, reading the line as a shell does: a backslash before the newline
    (and, as pasted, the spaces after it) continues the line outside single quotes, but not in a
    comment (``# … \`` ends there: bash runs the next line on its own); a final `` ` `` (PowerShell)
    or ``^`` (cmd.exe) after a space continues it too."""
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if quote == "'":
            if ch == "'":
                quote = None
        elif ch == "\\":
            if not line[i + 1:].strip(" \t"):
                return line[:i], True, quote
            i += 1  # the escaped character
        elif quote == '"':
            if ch == '"':
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line, False, None  # a comment to the end of the line
        i += 1
    if quote is None:
        body = line.rstrip(" \t")
        if body.endswith(("`", "^")) and (len(body) == 1 or body[-2] in " \t"):
            return body[:-1], True, None
    return line, False, quote


def read_text(text: str) -> str:
    """Stdin or a file's text → the command text as a shell reads it: CRLF → LF, prompts dropped,
    continued lines joined (``_continued``; a continuation at the end of the text, where a paste
    stopped, is dropped), redirections removed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines, pending, quote = [], "", None
    for line in text.split("\n"):
        if not pending and quote is None:
            line = _strip_prompt(line)
        elif pending and quote is None and line.startswith("> "):
            line = line[2:]  # bash's continuation prompt (PS2) before a continued line
        body, goes_on, quote = _continued(line, quote)
        if goes_on:
            pending += body + " "
        else:
            lines.append(pending + line)
            pending = ""
    if pending:
        lines.append(pending)
    return _drop_redirections("\n".join(lines))


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(read_text(text), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.whitespace = " \t\r"  # newlines separate commands, below
    lexer.commenters = "#"
    out: list[str] = []
    try:
        for tok in lexer:
            out.append(tok)
    except ValueError as e:  # no closing quotation
        raise OptionError(f"--line: cannot split the line as a shell would ({e}); check its quotes") from None
    return out


def _commands(tokens: list[str]) -> list[list[str]]:
    """Split on ; && || | & and newlines (shlex returns newline inside a token stream as part of words)."""
    cmds: list[list[str]] = [[]]
    for tok in tokens:
        parts = tok.split("\n") if "\n" in tok else [tok]
        for i, part in enumerate(parts):
            if i > 0:
                cmds.append([])
            if part in _SEPARATORS:
                cmds.append([])
            elif part:
                cmds[-1].append(part)
    return [c for c in cmds if c]


_VAR_RE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _expand(word: str, shell_vars: dict) -> str:
    """``$VAR`` / ``${VAR}`` set earlier in the text (``MODEL=...; vllm serve $MODEL``); others stay."""
    return _VAR_RE.sub(lambda m: shell_vars.get(m.group(1) or m.group(2), m.group(0)), word)


def _strip_prefixes(cmd: list[str]) -> tuple[list[str], dict, bool]:
    """``sudo``, ``env``, ``export``, ``uv run`` and ``VAR=value`` words before the program →
    (the program and its words, the assignments, whether ``export`` was among them)."""
    assigns: dict = {}
    exported = False
    i = 0
    while i < len(cmd):
        word = cmd[i]
        if word in ("sudo", "env", "export", "exec", "nohup", "time"):
            exported = exported or word == "export"
            i += 1
            continue
        if word == "uv" and cmd[i + 1:i + 2] == ["run"]:
            i += 2
            continue
        m = _ENV_RE.match(word)
        if m:
            assigns[m.group(1)] = m.group(2)
            i += 1
            continue
        break
    return cmd[i:], assigns, exported


def _is_python(word: str) -> bool:
    return re.fullmatch(r"(.*/)?python(\d+(\.\d+)?)?", word) is not None


def _docker(rest: list[str], env: dict) -> tuple[str, list[str]]:
    """``docker run`` options → (image, arguments after the image); ``-e``/``--env`` go to ``env``."""
    i = 0
    while i < len(rest):
        word = rest[i]
        if not word.startswith("-") or word == "-":
            return word, rest[i + 1:]
        name, eq, value = word.partition("=")
        if name in ("-e", "--env"):
            if not eq:
                i += 1
                if i >= len(rest):
                    raise OptionError(f"--line: docker {name} needs VAR=value")
                value = rest[i]
            m = _ENV_RE.match(value)
            if m:
                env[m.group(1)] = m.group(2)
            # `-e NAME` passes kvplan's own environment's value; nothing to read from the line
            i += 1
            continue
        if name.startswith("-e") and not name.startswith("--") and len(name) > 2:  # -eVAR=value
            m = _ENV_RE.match(word[2:])
            if m:
                env[m.group(1)] = m.group(2)
            i += 1
            continue
        if eq or name in _DOCKER_BOOL:
            i += 1
            continue
        if not name.startswith("--") and len(name) >= 2 and set(name[1:]) <= _DOCKER_SHORT_BOOL:
            i += 1
            continue
        i += 2  # an option with its value (-p 8000:8000, --gpus all, -v a:b, --ipc host)
    raise OptionError("--line: the docker command names no image; expected e.g. "
                      "'docker run --gpus all vllm/vllm-openai:v0.18.0 --model MODEL'")


def _release_of_tag(tag: str | None) -> str | None:
    """``v0.18.0`` → ``0.18.0``; ``v0.6.6.post1`` → ``0.6.6`` (a post release is its release's fix);
    ``v0.11.0rc1`` → ``0.11.0``; ``latest``, ``nightly``, NGC's ``25.09-py3`` → None."""
    if not tag:
        return None
    m = _TAG_RE.match(tag)
    return m.group("release") if m else None


def tag_is_prerelease(tag: str | None) -> bool:
    m = _TAG_RE.match(tag or "")
    return bool(m and m.group("rest") and m.group("rest").lstrip(".").startswith(("rc", "dev")))


def parse_line(text: str) -> ServeLine:
    """One pasted line → ``ServeLine``. Raises OptionError (one line) when no command in the
    text runs ``vllm serve``, vLLM's API server module or a vLLM image."""
    if not text or not text.strip():
        raise OptionError("--line is empty; paste the command you run, e.g. 'vllm serve MODEL --max-model-len 32k'")
    env: dict = {}
    shell_vars: dict = {}
    for words in _commands(_tokens(text)):
        rest, assigns, exported = _strip_prefixes(words)
        shell_vars.update(assigns)
        if rest or exported:  # a prefix of the command, or exported: vLLM's process sees it
            env.update(assigns)
        cmd = [_expand(w, shell_vars) for w in rest]
        if not cmd:
            continue
        prog = cmd[0].rsplit("/", 1)[-1]
        if prog == "kvplan" or (_is_python(prog) and cmd[1:3] in (["-m", "kvplan"], ["-m", "kvplan.cli"])):
            raise OptionError("--line: the text is a kvplan command, not the line vLLM runs; give --line the "
                              "vllm serve line itself (kvplan's options go on kvplan's command line)")
        if prog == "vllm":
            if len(cmd) < 2 or cmd[1] != "serve":
                raise OptionError(f"--line: 'vllm {cmd[1] if len(cmd) > 1 else ''}'".rstrip() +
                                  " is not 'vllm serve'; kvplan reads serve lines")
            return ServeLine("vllm serve", tuple(cmd[2:]), dict(env), text=text)
        if _is_python(prog) and "-m" in cmd:
            k = cmd.index("-m")
            module = cmd[k + 1] if k + 1 < len(cmd) else ""
            if module in API_SERVER_MODULES:
                return ServeLine("api_server", tuple(cmd[k + 2:]), dict(env), text=text)
            if module == "vllm.entrypoints.cli.main" and cmd[k + 2:k + 3] == ["serve"]:
                return ServeLine("vllm serve", tuple(cmd[k + 3:]), dict(env), text=text)
        if prog in ("docker", "podman", "nerdctl") and len(cmd) > 1 and cmd[1] == "run":
            image, args = _docker(cmd[2:], env)
            name, _, tag = image.rpartition(":") if ":" in image.rsplit("/", 1)[-1] else (image, "", "")
            if args[:2] == ["vllm", "serve"]:
                args = args[2:]
            elif _is_python(args[0] if args else "") and args[1:3] and args[2] in API_SERVER_MODULES:
                args = args[3:]
            return ServeLine("docker", tuple(args), dict(env), image=image, image_tag=tag or None,
                             image_release=_release_of_tag(tag), text=text)
        if prog in ("export",):
            continue
    raise OptionError("--line: no 'vllm serve', 'python -m vllm.entrypoints.openai.api_server' or "
                      "'docker run ... vllm/vllm-openai:TAG' command in the line")
