// JSON Schema front end: a schema (response_format json_schema, guided_json,
// tool parameters) to a Grammar whose every sentence validates against it.
//
// Fail-closed: every keyword listed below is enforced; any other keyword is
// an error whose message names the keyword and its JSON path, e.g.
//   unsupported JSON Schema keyword 'patternProperties' at $.properties.a
// so the server can answer 400 instead of silently ignoring it.
//
// Enforced: type (one or a list), properties, required, additionalProperties
// (false, true, or a schema; absent means no extra keys are generated, as in
// OpenAI strict mode), items, prefixItems, minItems, maxItems, enum, const,
// anyOf, oneOf (only when its branches are provably exclusive: disjoint
// types, or disjoint const/enum values, possibly of a required property),
// allOf (merged into one schema; conflicting pattern/format/const is an
// error), $ref to "#", "#/$defs/..", "#/definitions/.." or any JSON pointer
// in the document (recursion allowed), minLength, maxLength, pattern
// (anchored at both ends, intersected with the length bounds), format
// (date-time, date, time, uuid, email, ipv4), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum (integers exactly; a bounded "number"
// yields values whose integer part lies in the bounds, fractional ones only
// where the whole interval fits). Annotations (title, description, default,
// examples, $schema, $id, $comment, deprecated, readOnly, writeOnly) are
// ignored. enum/const may only be combined with type and annotations.
//
// Output shape (bounded, so a model cannot emit endless whitespace):
// properties in schema order; at every separator (after { [ , : and before
// } ]) either nothing, one space, or a newline followed by at most
// max_indent spaces. Integers have at most 19 digits, fractions at most 17,
// exponents at most 2. Strings are generated with raw characters except the
// mandatory escapes (\" \\ and control characters), and extra property keys
// without escapes, so every length bound counts what Python's json decodes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "util/status.h"

namespace strata {

struct JsonSchemaOptions {
  int32_t max_indent = 20;  // spaces after a newline at one separator
  int32_t max_depth = 64;   // schema nesting (after $ref expansion of siblings)
  size_t max_schema_bytes = 1 << 20;
};

Result<Grammar> grammar_from_json_schema(std::string_view schema_json,
                                         const JsonSchemaOptions& options = {});
// Any JSON value (object_only: a top-level object, for json_object mode).
Grammar grammar_any_json(bool object_only, const JsonSchemaOptions& options = {});
// Exactly one of the given strings.
Result<Grammar> grammar_from_choices(const std::vector<std::string>& choices);

}  // namespace strata
