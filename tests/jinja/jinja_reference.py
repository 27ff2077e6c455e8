#!/usr/bin/python3
"""Reference renderings for strata's Jinja engine (tests/jinja/jinja_differential.cpp).

Extracts the real chat templates under models/templates/ from llama.cpp's source, which
node-llama-cpp@3.22.1 carries as llama/gitRelease.bundle (installed in oracle/), generates a
deterministic set of conversations for each, and renders every one with Python's Jinja2
configured exactly as Hugging Face transformers' apply_chat_template does
(transformers/utils/chat_template_utils.py: _cached_compile_jinja_template and
render_jinja_template):

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[AssistantTracker, jinja2.ext.loopcontrols])
  filters["tojson"]   = json.dumps(x, ensure_ascii, indent, separators, sort_keys)
  globals["raise_exception"] = raise jinja2.exceptions.TemplateError(message)
  globals["strftime_now"]    = datetime.now().strftime(format)   (a fixed date here)

and render(messages=..., tools=..., documents=..., add_generation_prompt=..., **special tokens,
**chat_template_kwargs), with transformers' continue_final_message handling.

Writes OUT/templates/*.jinja (never into the repository) and OUT/cases.json:
  {"templates": {name: source}, "template_errors": {name: message},
   "cases": [{"template", "id", "messages", "tools", "documents", "add_generation_prompt",
              "continue_final_message", "chat_template_kwargs", "bos_token", "eos_token",
              "expected" (str or null), "error_kind" ("raised" | "error" | null),
              "error" (message)}]}

Usage: /usr/bin/python3 tests/jinja/jinja_reference.py --bundle BUNDLE --out DIR
"""
import argparse
import copy
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile

import jinja2
import jinja2.ext
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2026, 1, 15, 10, 30, 45)
BOS = "<s>"
EOS = "</s>"


# ---------------------------------------------------------------- environment --
class AssistantTracker(Extension):
    """transformers' {% generation %} extension: renders its body (the tracker is inactive
    when apply_chat_template is called without return_assistant_tokens_mask)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return FIXED_NOW.strftime(format)


def make_env():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


def render(compiled, source, messages, tools, documents, add_generation_prompt,
           continue_final_message, kwargs):
    """transformers.utils.chat_template_utils.render_jinja_template for one chat."""
    template_kwargs = {"bos_token": BOS, "eos_token": EOS, **kwargs}
    chat = messages
    final_message = None
    if continue_final_message:
        if add_generation_prompt:
            raise ValueError("continue_final_message and add_generation_prompt are not compatible.")
        chat = copy.deepcopy(chat)
        if (final_message := chat[-1].get("content")) is None:
            raise ValueError('continue_final_message is set but the final message has no "content" to continue!')
        if "content" not in source:
            raise ValueError("content is not an accepted field in the chat_template")
        if isinstance(final_message, (list, tuple)):
            for block in reversed(final_message):
                if "text" in block:
                    final_message = block["text"]
                    block["text"] = block["text"] + CONTINUE_TAG
                    break
            else:
                raise ValueError("could not find any text to continue in the final message!")
        else:
            chat[-1]["content"] = chat[-1]["content"] + CONTINUE_TAG
    rendered = compiled.render(messages=chat, tools=tools, documents=documents,
                               add_generation_prompt=add_generation_prompt, **template_kwargs)
    if continue_final_message:
        if final_message.strip() not in rendered or CONTINUE_TAG.strip() not in rendered:
            raise ValueError("the final message does not appear in the chat after applying the chat template!")
        tag_loc = rendered.rindex(CONTINUE_TAG.strip())
        if rendered[tag_loc:tag_loc + len(CONTINUE_TAG)] == CONTINUE_TAG:
            rendered = rendered[:tag_loc]
        else:
            rendered = rendered[:tag_loc].rstrip()
    return rendered


# ---------------------------------------------------------------- conversations --
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a given location (°C or °F).",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "The city and country, e.g. Paris, France"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}},
            "required": ["location"]}}},
    {"type": "function", "function": {
        "name": "search_documents",
        "description": "Search the knowledge base. Returns up to `max_results` snippets; use \"quotes\" for phrases.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "Search terms"},
            "max_results": {"type": "integer", "description": "How many results", "default": 5},
            "filters": {"type": "object", "description": "Optional filters",
                        "properties": {"year": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}}},
            "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "calculate",
        "description": "Évalue une expression arithmétique — 计算表达式.",
        "parameters": {"type": "object", "properties": {
            "expression": {"type": "string"},
            "precision": {"type": "number", "minimum": 0, "maximum": 10.5}},
            "required": ["expression", "precision"]}}},
]

SYSTEMS = [
    "You are a helpful assistant.",
    "You are a concise assistant. Answer in at most two sentences.",
    "Tu es un assistant utile. 你是一个有用的助手。 🌍",
    "Always reply in JSON like {\"answer\": \"...\"}; never write {{ or {% yourself.",
    "  Leading and trailing spaces matter.  \n",
]

USERS = [
    "Hello!",
    "What is the capital of France?",
    "Can you explain how a hash map works?\nPlease keep it short.",
    "Grüße aus München! Wie geht's? 😀👍🏽",
    "東京の天気はどうですか？",
    "مرحبا، كيف حالك؟",
    "Render this literally: {{ messages }} and {% if x %}y{% endif %} and {# not a comment #}",
    "Quotes: 'single', \"double\", back\\slash, tab\tend",
    "  padded question with trailing newline\n",
    "Write a Python function:\n```python\ndef add(a, b):\n    return a + b\n```",
    "",
    "Combining: e\u0301 a\u0308 — and ZWJ 👨‍👩‍👧‍👦",
]

ASSISTANTS = [
    "Hi! How can I help you today?",
    "The capital of France is Paris.",
    "A hash map stores key/value pairs in buckets chosen by a hash of the key.",
    "Sure — here you go: {\"answer\": 42}",
    "Natürlich! 当然可以。",
    "Line one.\nLine two.\n\nLine four.",
    "  spaced reply  ",
]

REASONING = [
    "The user greets me; I should greet back.",
    "France → Paris. Simple recall.",
    "Let me think step by step: 1) buckets 2) collisions {chaining}.",
]

TOOL_RESULTS = [
    "{\"temperature\": 21, \"unit\": \"celsius\", \"condition\": \"sunny\"}",
    "{\"results\": [\"snippet one\", \"snippet «two»\"]}",
    "3.14159",
]

DOCUMENTS = [
    {"title": "Paris", "text": "Paris is the capital and most populous city of France."},
    {"title": "Hash tables", "text": "A hash table maps keys to values using a hash function."},
]


def tool_call(rng, idx):
    name = rng.choice(["get_weather", "search_documents", "calculate"])
    if name == "get_weather":
        args = {"location": rng.choice(["Paris, France", "Zürich", "東京"]), "unit": rng.choice(["celsius", "fahrenheit"])}
    elif name == "search_documents":
        args = {"query": rng.choice(["hash map", "Eiffel tower height", "\"exact phrase\""]),
                "max_results": rng.randint(1, 10), "filters": {"year": 2024, "tags": ["a", "b"]}}
    else:
        args = {"expression": "2 * (3 + 4)", "precision": 0.5, "verbose": rng.choice([True, False, None])}
    return {"id": f"call_{idx:04d}", "type": "function", "function": {"name": name, "arguments": args}}


def assistant_message(rng, with_reasoning, think_in_content):
    content = rng.choice(ASSISTANTS)
    msg = {"role": "assistant", "content": content}
    if with_reasoning:
        msg["reasoning_content"] = rng.choice(REASONING)
    if think_in_content:
        msg["content"] = "<think>\n" + rng.choice(REASONING) + "\n</think>\n\n" + content
    return msg


def conversation(rng, spec):
    """Builds one conversation from a shape description."""
    messages = []
    if spec.get("system"):
        messages.append({"role": "system", "content": rng.choice(SYSTEMS)})
    turns = spec.get("turns", 1)
    call_idx = 0
    for t in range(turns):
        role = "user" if t % 2 == 0 else "assistant"
        if spec.get("double_user") and t == 1:
            role = "user"
        if role == "user":
            messages.append({"role": "user", "content": rng.choice(USERS)})
        elif spec.get("tool_calls") and t == 1:
            n = spec.get("num_calls", 1)
            calls = []
            for _ in range(n):
                calls.append(tool_call(rng, call_idx))
                call_idx += 1
            # OpenAI clients send null content with tool calls; some send "".
            content = spec.get("call_content", rng.choice([None, ""]))
            msg = {"role": "assistant", "content": content, "tool_calls": calls}
            if spec.get("reasoning"):
                msg["reasoning_content"] = rng.choice(REASONING)
            messages.append(msg)
            for c in calls:
                messages.append({"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"],
                                 "content": rng.choice(TOOL_RESULTS)})
            messages.append(assistant_message(rng, spec.get("reasoning", False), False))
        else:
            messages.append(assistant_message(rng, spec.get("reasoning", False), spec.get("think", False)))
    if spec.get("end_assistant") and messages[-1]["role"] != "assistant":
        messages.append(assistant_message(rng, spec.get("reasoning", False), False))
    return messages


def random_conversation(rng):
    messages = []
    if rng.random() < 0.5:
        messages.append({"role": "system", "content": rng.choice(SYSTEMS)})
    call_idx = 0
    for t in range(rng.randint(1, 6)):
        if t % 2 == 0:
            content = rng.choice(USERS)
            if rng.random() < 0.15:
                content = [{"type": "text", "text": content}]
            messages.append({"role": "user", "content": content})
            continue
        kind = rng.choice(["plain", "reasoning", "think", "tool"])
        if kind == "tool":
            calls = [tool_call(rng, call_idx + i) for i in range(rng.randint(1, 2))]
            call_idx += len(calls)
            msg = {"role": "assistant", "content": rng.choice([None, "", "Calling a tool."]), "tool_calls": calls}
            if rng.random() < 0.5:
                msg["reasoning_content"] = rng.choice(REASONING)
            messages.append(msg)
            for c in calls:
                messages.append({"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"],
                                 "content": rng.choice(TOOL_RESULTS)})
        else:
            messages.append(assistant_message(rng, kind == "reasoning", kind == "think"))
    return messages


SHAPES = [
    {"name": "user"},
    {"name": "system_user", "system": True},
    {"name": "two_turns", "turns": 3},
    {"name": "system_two_turns", "system": True, "turns": 3},
    {"name": "six_turns", "turns": 6},
    {"name": "system_six_turns", "system": True, "turns": 6, "end_assistant": False},
    {"name": "ends_assistant", "turns": 2},
    {"name": "system_ends_assistant", "system": True, "turns": 4},
    {"name": "reasoning", "turns": 3, "reasoning": True},
    {"name": "system_reasoning_six", "system": True, "turns": 6, "reasoning": True},
    {"name": "think_in_content", "turns": 5, "think": True},
    {"name": "tools_user", "tools": True},
    {"name": "tools_system_user", "tools": True, "system": True},
    {"name": "tool_call_roundtrip", "tools": True, "turns": 3, "tool_calls": True},
    {"name": "tool_call_two_calls", "tools": True, "system": True, "turns": 3, "tool_calls": True, "num_calls": 2},
    {"name": "tool_call_with_content", "tools": True, "turns": 3, "tool_calls": True, "call_content": "Let me check."},
    {"name": "tool_call_reasoning", "tools": True, "turns": 5, "tool_calls": True, "reasoning": True},
    {"name": "tool_call_no_tools", "turns": 3, "tool_calls": True},
    {"name": "tools_six_turns", "tools": True, "system": True, "turns": 6},
    {"name": "double_user", "turns": 3, "double_user": True},
    {"name": "documents", "documents": True, "turns": 1},
    {"name": "system_documents_tools", "system": True, "documents": True, "tools": True, "turns": 3},
]

KWARGS = [
    {},
    {"enable_thinking": False},
    {"enable_thinking": True},
    {"reasoning_effort": "high"},
    {"thinking": True},
]


def make_cases(template_name, rng):
    cases = []
    for shape in SHAPES:
        for variant in range(2):
            messages = conversation(rng, shape)
            tools = copy.deepcopy(TOOLS[: rng.randint(1, 3)]) if shape.get("tools") else None
            documents = copy.deepcopy(DOCUMENTS) if shape.get("documents") else None
            kwargs = KWARGS[0] if variant == 0 else rng.choice(KWARGS)
            for agp in (True, False):
                cases.append({
                    "template": template_name,
                    "id": f"{shape['name']}/{variant}/agp={int(agp)}",
                    "messages": messages, "tools": tools, "documents": documents,
                    "add_generation_prompt": agp, "continue_final_message": False,
                    "chat_template_kwargs": kwargs, "bos_token": BOS, "eos_token": EOS,
                })
    # Random mixes: 1-6 turns, any kind of assistant turn, list-of-parts content.
    for k in range(20):
        messages = random_conversation(rng)
        tools = copy.deepcopy(TOOLS[: rng.randint(1, 3)]) if rng.random() < 0.5 else None
        kwargs = rng.choice(KWARGS)
        agp = rng.random() < 0.5
        cases.append({
            "template": template_name, "id": f"random/{k}/agp={int(agp)}",
            "messages": messages, "tools": tools, "documents": None,
            "add_generation_prompt": agp, "continue_final_message": False,
            "chat_template_kwargs": kwargs, "bos_token": BOS, "eos_token": EOS,
        })
    # continue_final_message on chats whose last turn is the assistant's.
    for k, shape in enumerate([{"turns": 2}, {"system": True, "turns": 4}, {"turns": 2, "reasoning": True}]):
        messages = conversation(rng, shape)
        messages[-1]["content"] = rng.choice(["The answer is", "Sure, here is a", "  Partial reply with spaces  "])
        cases.append({
            "template": template_name, "id": f"continue_final/{k}",
            "messages": messages, "tools": None, "documents": None,
            "add_generation_prompt": False, "continue_final_message": True,
            "chat_template_kwargs": {}, "bos_token": BOS, "eos_token": EOS,
        })
    return cases


# ---------------------------------------------------------------- main --
def extract_templates(bundle, out_dir):
    dest = os.path.join(out_dir, "templates")
    os.makedirs(dest, exist_ok=True)
    with tempfile.TemporaryDirectory() as git_dir:
        subprocess.run(["git", "init", "-q", "--bare", git_dir], check=True)
        subprocess.run(["git", "--git-dir", git_dir, "fetch", "-q", bundle, "HEAD"], check=True)
        names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "--name-only", "FETCH_HEAD",
                                "models/templates/"], check=True, capture_output=True, text=True).stdout.split()
        templates = {}
        for path in names:
            if not path.endswith(".jinja"):
                continue
            blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"FETCH_HEAD:{path}"],
                                  check=True, capture_output=True).stdout
            name = os.path.basename(path)[: -len(".jinja")]
            with open(os.path.join(dest, name + ".jinja"), "wb") as f:
                f.write(blob)
            templates[name] = blob.decode("utf-8")
    return templates


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="substring filter on template names")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    templates = extract_templates(args.bundle, args.out)
    env = make_env()
    out = {"templates": {}, "template_errors": {}, "cases": []}
    counts = {"rendered": 0, "raised": 0, "error": 0}
    for name in sorted(templates):
        if args.only and args.only not in name:
            continue
        source = templates[name]
        out["templates"][name] = source
        rng = random.Random(f"strata-jinja-{name}")
        cases = make_cases(name, rng)
        try:
            compiled = env.from_string(source)
        except Exception as e:  # TemplateSyntaxError / TemplateAssertionError
            out["template_errors"][name] = f"{type(e).__name__}: {e}"
            compiled = None
        for case in cases:
            case = copy.deepcopy(case)
            if compiled is None:
                case.update(expected=None, error_kind="error", error=out["template_errors"][name])
            else:
                try:
                    text = render(compiled, source, copy.deepcopy(case["messages"]), case["tools"],
                                  case["documents"], case["add_generation_prompt"],
                                  case["continue_final_message"], case["chat_template_kwargs"])
                    case.update(expected=text, error_kind=None, error=None)
                except Exception as e:
                    kind = "raised" if type(e) is jinja2.exceptions.TemplateError else "error"
                    case.update(expected=None, error_kind=kind, error=str(e) if kind == "raised" else f"{type(e).__name__}: {e}")
            counts["rendered" if case["error_kind"] is None else case["error_kind"]] += 1
            out["cases"].append(case)
    # One-construct templates (tests/jinja/jinja_snippets.py), variables as kwargs.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jinja_snippets
    for snippet_name, source, variables in jinja_snippets.snippets():
        name = "snippet/" + snippet_name
        if args.only and args.only not in name:
            continue
        out["templates"][name] = source
        case = {"template": name, "id": "0", "messages": [], "tools": None, "documents": None,
                "add_generation_prompt": False, "continue_final_message": False,
                "chat_template_kwargs": copy.deepcopy(variables), "bos_token": BOS, "eos_token": EOS}
        try:
            compiled = env.from_string(source)
            text = render(compiled, source, [], None, None, False, False, copy.deepcopy(variables))
            case.update(expected=text, error_kind=None, error=None)
        except Exception as e:
            kind = "raised" if type(e) is jinja2.exceptions.TemplateError else "error"
            case.update(expected=None, error_kind=kind,
                        error=str(e) if kind == "raised" else f"{type(e).__name__}: {e}")
        counts["rendered" if case["error_kind"] is None else case["error_kind"]] += 1
        out["cases"].append(case)
    with open(os.path.join(args.out, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    print(f"jinja_reference: {len(out['templates'])} templates, {len(out['cases'])} cases "
          f"(Jinja2 {jinja2.__version__}: {counts['rendered']} rendered, {counts['raised']} raise_exception, "
          f"{counts['error']} other errors; {len(out['template_errors'])} templates fail to compile)")


if __name__ == "__main__":
    sys.exit(main())
