#pragma once
/// @file tool.hpp
/// The tool contract (issue 26 item 1), with no agent-framework dependency: what a host
/// hands a model (ToolDefinition), what the model sends back (ToolCall) and what the tool
/// answers (ToolResult). The shapes follow OpenAI-style tool calls and MCP's tools/call, so a
/// host for either (or llama.cpp's server) maps them field for field (docs/tools.md).
///
/// JSON appears only where it is the contract: the input schema, the call's arguments and a
/// structured result. Everything else is plain C++.
///
/// Every content item carries information-flow labels. An item the tool left unlabelled is
/// stamped by the framework with the tool's declared labels; the default for guest-derived
/// content is untrusted and private (nothing a guest printed is trusted, and it may carry
/// conversation data).

#include <nlohmann/json.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "maf/sandbox/artifact.hpp"
#include "maf/sandbox/content_labels.hpp"
#include "maf/sandbox/enum.hpp"

namespace maf::sandbox {

/// Text for the model.
struct TextContent {
  std::string text;
  friend bool operator==(const TextContent&, const TextContent&) = default;
};
/// Opaque bytes with the media type the tool declares (never sniffed).
struct BytesContent {
  std::string data;
  std::string media_type;
  friend bool operator==(const BytesContent&, const BytesContent&) = default;
};
/// A link to an artifact a sink landed (collect_outputs): the model sees `display`, never the
/// host's handle.
struct ArtifactLink {
  LandedArtifact artifact;
  std::optional<std::string> media_type{};
};

/// One item of a result. `labels` absent = stamped by the framework with the tool's labels.
struct ContentItem {
  std::variant<TextContent, BytesContent, ArtifactLink> value;
  std::optional<ContentLabels> labels{};

  static ContentItem text(std::string text, std::optional<ContentLabels> labels = std::nullopt) {
    return {TextContent{std::move(text)}, labels};
  }
  static ContentItem bytes(std::string data, std::string media_type,
                           std::optional<ContentLabels> labels = std::nullopt) {
    return {BytesContent{std::move(data), std::move(media_type)}, labels};
  }
  static ContentItem link(LandedArtifact artifact, std::optional<std::string> media_type = std::nullopt,
                          std::optional<ContentLabels> labels = std::nullopt) {
    return {ArtifactLink{std::move(artifact), std::move(media_type)}, labels};
  }
};

/// Hints about a tool's behaviour, as MCP names them. Hints, not policy: nothing in the
/// library decides on them.
struct ToolAnnotations {
  std::optional<std::string> title{};
  bool read_only_hint = false;
  bool destructive_hint = true;
  bool idempotent_hint = false;
  bool open_world_hint = false;
};

/// What a host advertises to a model.
struct ToolDefinition {
  std::string name;
  std::string description;
  /// A JSON Schema object (draft 7) the arguments are validated against before anything runs.
  nlohmann::json input_schema = nlohmann::json{{"type", "object"}};
  ToolAnnotations annotations{};
};

/// One call the model made. `id` correlates the result; it is model-side data and never
/// becomes part of a sandbox key (C-14).
///
/// Not an aggregate, on purpose: GCC 12 destroys a braced aggregate temporary twice when it
/// stands in a `co_await` expression (docs/tools.md "GCC 12 and temporaries"), and
/// `co_await tool.invoke({"1", "shell", args})` must be safe. Braces call the constructor.
struct ToolCall {
  ToolCall() = default;
  ToolCall(std::string id_, std::string name_, nlohmann::json arguments_ = nlohmann::json::object())
      : id(std::move(id_)), name(std::move(name_)), arguments(std::move(arguments_)) {}

  std::string id{};
  std::string name{};
  nlohmann::json arguments = nlohmann::json::object();
};

/// What a tool answers. `is_error` results go back to the model like any other result.
struct ToolResult {
  std::vector<ContentItem> content{};
  bool is_error = false;
  std::optional<nlohmann::json> structured{};

  static ToolResult text(std::string text, std::optional<ContentLabels> labels = std::nullopt) {
    ToolResult r;
    r.content.push_back(ContentItem::text(std::move(text), labels));
    return r;
  }
  /// An is_error result with one library-authored sentence.
  static ToolResult error(std::string text, ContentLabels labels = kLibraryAuthoredLabels) {
    ToolResult r = ToolResult::text(std::move(text), labels);
    r.is_error = true;
    return r;
  }
  /// Every text item joined by newlines (what a plain-text host shows).
  std::string joined_text() const;
};

/// Parses one OpenAI-style call — `{"id", "name", "arguments"}` (or the nested
/// `{"id", "function": {"name", "arguments"}}`), where `arguments` is an object or a JSON
/// string holding one. Throws ValueError naming what is missing or malformed.
ToolCall parse_tool_call(std::string_view json_text);

/// The OpenAI-style tool message for a result: `{"tool_call_id", "is_error", "content": [...]}`,
/// each item with its labels; bytes are base64.
nlohmann::json to_json(const ToolCall& call, const ToolResult& result);

/// The definition as OpenAI's `tools[]` entry: `{"type":"function","function":{...}}`.
nlohmann::json to_openai_json(const ToolDefinition& definition);

/// The definition as MCP's `tools/list` entry: `{"name", "description", "inputSchema",
/// "annotations"}` (the annotations' hints by MCP's names, the title when set).
nlohmann::json to_mcp_json(const ToolDefinition& definition);

}  // namespace maf::sandbox
