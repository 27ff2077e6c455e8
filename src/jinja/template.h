// Template: a parsed Jinja template, rendered with the semantics Hugging Face
// transformers gives chat templates (Jinja2 3.1 in an
// ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, the
// loopcontrols extension, `{% generation %}`, and the globals
// raise_exception and strftime_now; `tojson` as transformers defines it).
//
//   auto t = Template::parse(source);             // once
//   auto text = t->render({{"messages", msgs}});  // per request, any thread
//
// Ownership and thread-safety: a Template is a cheap handle to an immutable
// program (copies share it). render() is const and keeps all its state on
// its own stack, so one Template may render on many threads at once.
// Errors never escape as exceptions: parse and render return a
// TemplateError (kind, message, line, column).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/lexer.h"
#include "jinja/render_options.h"
#include "jinja/template_error.h"
#include "jinja/value.h"

namespace strata::jinja {

struct TemplateProgram;

struct ParseOptions {
  LexerOptions lexer;  // trim_blocks / lstrip_blocks, both on (Hugging Face)
  // Bound on the depth of the syntax tree: nested statements, parentheses,
  // and the links of a chain (a + b + c, x.y.z, v|f|g). Jinja's recursive
  // Python compiler gives up at a few hundred levels too.
  int max_nesting = 256;
  // Bound on the template's size in bytes.
  size_t max_source_bytes = size_t{4} << 20;
};

class Template {
 public:
  static Expected<Template> parse(std::string_view source, const ParseOptions& options = {});

  // Renders with `vars` as the context; a later duplicate name wins. As in
  // Jinja, a template may change a list it was given (list.pop/clear are
  // allowed by the sandbox), so concurrent renders need their own Values
  // (ChatTemplateRenderer builds them per call).
  Expected<std::string> render(const std::vector<std::pair<std::string, Value>>& vars,
                               const RenderOptions& options = {}) const;

  // The names the template refers to (for diagnostics and tests).
  const std::vector<std::string>& names() const;

 private:
  explicit Template(std::shared_ptr<const TemplateProgram> program)
      : program_(std::move(program)) {}
  std::shared_ptr<const TemplateProgram> program_;
};

}  // namespace strata::jinja
