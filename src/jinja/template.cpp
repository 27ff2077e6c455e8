#include "jinja/template.h"

#include <new>

#include "jinja/ast.h"
#include "jinja/interpreter.h"
#include "jinja/parser.h"

namespace strata::jinja {

Expected<Template> Template::parse(std::string_view source, const ParseOptions& options) {
  if (source.size() > options.max_source_bytes) {
    return TemplateError(ErrorKind::kLimit, "template source of " + std::to_string(source.size()) +
                                                " bytes exceeds " +
                                                std::to_string(options.max_source_bytes));
  }
  try {
    auto program = std::make_shared<TemplateProgram>(
        parse_program(tokenize(source, options.lexer), options.max_nesting));
    return Template(std::move(program));
  } catch (TemplateException& e) {
    return std::move(e.error());
  } catch (const std::bad_alloc&) {
    return TemplateError(ErrorKind::kLimit, "out of memory while parsing the template");
  } catch (const std::exception& e) {
    return TemplateError(ErrorKind::kRuntime, std::string("internal error: ") + e.what());
  }
}

Expected<std::string> Template::render(const std::vector<std::pair<std::string, Value>>& vars,
                                       const RenderOptions& options) const {
  try {
    Interpreter interp(*program_, options);
    return interp.render(vars);
  } catch (TemplateException& e) {
    return std::move(e.error());
  } catch (const std::bad_alloc&) {
    return TemplateError(ErrorKind::kLimit, "out of memory while rendering the template");
  } catch (const std::length_error& e) {
    return TemplateError(ErrorKind::kLimit, std::string("template value too large: ") + e.what());
  } catch (const std::exception& e) {
    return TemplateError(ErrorKind::kRuntime, std::string("internal error: ") + e.what());
  }
}

const std::vector<std::string>& Template::names() const {
  return program_->symbols;
}

}  // namespace strata::jinja
