#!/usr/bin/python3
"""Reference renderings for tests/e2e/chat_template.test.mjs: Python Jinja2 with Hugging Face's
settings (tests/jinja/jinja_reference.py's environment and render, bos_token "<s>", eos_token
"</s>" as the e2e model's tokenizer has them).

Reads one JSON object on stdin:
  {"bundle": node-llama-cpp's llama/gitRelease.bundle, "out": a scratch directory,
   "cases": [{"template": name under models/templates/ without .jinja, "messages", "tools",
              "documents", "add_generation_prompt", "continue_final_message",
              "chat_template_kwargs"}]}
extracts the templates into OUT/templates/ (read from the installed package, never copied into
the repository) and writes {"renders": [text or {"error": message}]} on stdout.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jinja"))
import jinja_reference  # noqa: E402


def main():
    req = json.load(sys.stdin)
    templates = jinja_reference.extract_templates(req["bundle"], req["out"])
    env = jinja_reference.make_env()
    compiled = {}
    renders = []
    for case in req["cases"]:
        name = case["template"]
        if name not in compiled:
            compiled[name] = env.from_string(templates[name])
        try:
            renders.append(jinja_reference.render(
                compiled[name], templates[name], case["messages"], case.get("tools"),
                case.get("documents"), case.get("add_generation_prompt", True),
                case.get("continue_final_message", False), case.get("chat_template_kwargs") or {}))
        except Exception as e:  # noqa: BLE001 -- the test compares the message
            # "raised": the template's raise_exception (its message must match).
            raised = type(e) is jinja_reference.jinja2.exceptions.TemplateError
            renders.append({"error": str(e), "kind": "raised" if raised else "error"})
    json.dump({"renders": renders}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
