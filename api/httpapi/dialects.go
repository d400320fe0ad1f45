package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/api/mcpserver"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/toolerr"
)

// GET /v1/tools?format= lists the tools in the shape an agent framework
// takes as it is, so a client passes the list on without rewriting it:
//
//	openai            Chat Completions: {"type":"function","function":{name,description,parameters,strict?}}
//	openai-responses  Responses API:    {"type":"function",name,description,parameters,strict}
//	anthropic         Messages API:     {name,description,input_schema}
//	aisdk             Vercel AI SDK:    a ToolSet, {"<name>":{title?,description,inputSchema,outputSchema?,needsApproval?}}
//	mcp               MCP tools/list:   {name,title?,description,inputSchema,outputSchema?,annotations?}
//
// strict=true (openai and openai-responses) converts each tool's parameters
// to strict mode's subset where that keeps their meaning, and says per tool
// why not where it does not (see strictSchema); strict_report carries that.

// toolView is a tool as the dialects see it: the listing fields plus the
// manifest's optional metadata (title, output schema, behaviour
// annotations, approval), zero where the manifest has none. The title is
// the manifest's annotations.title: MCP and the AI SDK put it on the tool.
type toolView struct {
	Name, Description string
	Parameters        json.RawMessage
	Plugin, Version   string

	Title         string
	OutputSchema  json.RawMessage
	Annotations   *toolAnnotations
	NeedsApproval bool
	Icon          string // the manifest's data: URI; format=mcp sends it as icons
}

// toolAnnotations are the manifest's behaviour hints. The manifest writes
// each as a plain boolean, so when a manifest has annotations, an omitted
// hint means false; when it has none, no hint is claimed at all.
type toolAnnotations struct {
	ReadOnly, Destructive, Idempotent, OpenWorld bool
}

func viewOf(t host.ToolInfo) toolView {
	v := toolView{
		Name: t.Name, Description: t.Description, Parameters: t.Parameters,
		Plugin: t.Plugin, Version: t.Version,
		OutputSchema: t.OutputSchema, NeedsApproval: t.NeedsApproval, Icon: t.Icon,
	}
	if a := t.Annotations; a != nil {
		v.Title = a.Title
		v.Annotations = &toolAnnotations{ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld}
	}
	return v
}

func viewsOf(tools []host.ToolInfo) []toolView {
	views := make([]toolView, len(tools))
	for i, t := range tools {
		views[i] = viewOf(t)
	}
	return views
}

// dialect renders a tool list in one client's shape.
type dialect struct {
	name string
	// strict: the dialect has OpenAI's strict mode.
	strict bool
	render func(tools []toolView, strict bool) any
}

// dialects are the values of format=, in the order the error lists them.
var dialects = []dialect{
	{name: "openai", strict: true, render: renderOpenAI},
	{name: "openai-responses", strict: true, render: renderOpenAIResponses},
	{name: "anthropic", render: renderAnthropic},
	{name: "aisdk", render: renderAISDK},
	{name: "mcp", render: renderMCP},
}

func dialectNamed(name string) (dialect, bool) {
	for _, d := range dialects {
		if d.name == name {
			return d, true
		}
	}
	return dialect{}, false
}

func dialectNames(strictOnly bool) string {
	var names []string
	for _, d := range dialects {
		if d.strict || !strictOnly {
			names = append(names, "format="+d.name)
		}
	}
	return strings.Join(names, ", ")
}

func (a *API) listTools(w http.ResponseWriter, r *http.Request) {
	tools := a.b.Tools()
	if tools == nil {
		tools = []host.ToolInfo{} // [] rather than null
	}
	q, qerr := queryParams(r, "format", "strict")
	if qerr != nil {
		writeError(w, qerr)
		return
	}
	format := q.Get("format")
	strict := false
	switch s := q.Get("strict"); s {
	case "", "false":
	case "true":
		strict = true
	default:
		writeError(w, toolerr.Errorf(CodeInvalidRequest, "strict=%q: use strict=true or strict=false", s))
		return
	}
	if format == "" {
		if strict {
			writeError(w, toolerr.Errorf(CodeInvalidRequest, "strict=true needs a format that has strict mode: %s", dialectNames(true)))
			return
		}
		writeJSON(w, http.StatusOK, map[string][]host.ToolInfo{"tools": tools})
		return
	}
	d, ok := dialectNamed(format)
	if !ok {
		writeError(w, toolerr.Errorf(CodeInvalidRequest, "unknown format %q: use %s, or no format for toolhost's own listing", format, dialectNames(false)))
		return
	}
	if strict && !d.strict {
		writeError(w, toolerr.Errorf(CodeInvalidRequest, "format=%s has no strict mode; strict=true works with %s", d.name, dialectNames(true)))
		return
	}
	writeJSON(w, http.StatusOK, d.render(viewsOf(tools), strict))
}

// strictVerdict is one tool's line in strict_report.
type strictVerdict struct {
	Name   string `json:"name"`
	Strict bool   `json:"strict"`
	// Reason says why the tool is listed with strict false.
	Reason string `json:"reason,omitempty"`
	// MadeNullable and Dropped say how the strict schema differs from the
	// tool's own (see strictResult).
	MadeNullable []string `json:"made_nullable,omitempty"`
	Dropped      []string `json:"dropped,omitempty"`
}

// strictParameters returns the parameters to list for t and, when strict
// was asked for, the verdict: the converted schema, or the tool's own
// schema unchanged with the reason it cannot be strict.
func strictParameters(t toolView, strict bool) (json.RawMessage, *strictVerdict) {
	if !strict {
		return t.Parameters, nil
	}
	res, err := strictSchema(t.Parameters)
	if err != nil {
		return t.Parameters, &strictVerdict{Name: t.Name, Reason: err.Error()}
	}
	return res.Schema, &strictVerdict{Name: t.Name, Strict: true, MadeNullable: res.MadeNullable, Dropped: res.Dropped}
}

type openAIList[T any] struct {
	Tools        []T             `json:"tools"`
	StrictReport []strictVerdict `json:"strict_report,omitempty"`
}

type openAITool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict,omitempty"`
}

func renderOpenAI(tools []toolView, strict bool) any {
	out := openAIList[openAITool]{Tools: make([]openAITool, len(tools))}
	for i, t := range tools {
		params, v := strictParameters(t, strict)
		f := openAIFunction{Name: t.Name, Description: t.Description, Parameters: params}
		if v != nil {
			f.Strict = &v.Strict
			out.StrictReport = append(out.StrictReport, *v)
		}
		out.Tools[i] = openAITool{"function", f}
	}
	return out
}

// openAIResponsesTool always carries strict: the Responses API treats an
// absent strict as true, which would make the API reject (or reinterpret)
// a schema that was never converted.
type openAIResponsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

func renderOpenAIResponses(tools []toolView, strict bool) any {
	out := openAIList[openAIResponsesTool]{Tools: make([]openAIResponsesTool, len(tools))}
	for i, t := range tools {
		params, v := strictParameters(t, strict)
		rt := openAIResponsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params}
		if v != nil {
			rt.Strict = v.Strict
			out.StrictReport = append(out.StrictReport, *v)
		}
		out.Tools[i] = rt
	}
	return out
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func renderAnthropic(tools []toolView, _ bool) any {
	out := make([]anthropicTool, len(tools))
	for i, t := range tools {
		out[i] = anthropicTool{t.Name, t.Description, t.Parameters}
	}
	return map[string][]anthropicTool{"tools": out}
}

// aiSDKTool is one entry of an AI SDK ToolSet (the tools option of
// generateText and streamText is an object keyed by tool name). The client
// wraps the schemas with jsonSchema() and adds execute.
type aiSDKTool struct {
	Title         string          `json:"title,omitempty"`
	Description   string          `json:"description"`
	InputSchema   json.RawMessage `json:"inputSchema"`
	OutputSchema  json.RawMessage `json:"outputSchema,omitempty"`
	NeedsApproval bool            `json:"needsApproval,omitempty"`
}

func renderAISDK(tools []toolView, _ bool) any {
	out := make(map[string]aiSDKTool, len(tools))
	for _, t := range tools {
		out[t.Name] = aiSDKTool{
			Title: t.Title, Description: t.Description, InputSchema: t.Parameters,
			OutputSchema: t.OutputSchema, NeedsApproval: t.NeedsApproval,
		}
	}
	return map[string]map[string]aiSDKTool{"tools": out}
}

type mcpTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *mcpAnnotations `json:"annotations,omitempty"`
	Icons        []mcp.Icon      `json:"icons,omitempty"`
}

// mcpAnnotations are MCP's tool annotations. Every hint is written out:
// MCP's defaults (destructive and open-world true when absent) are the
// opposite of the manifest's (false when omitted).
type mcpAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

func renderMCP(tools []toolView, _ bool) any {
	out := make([]mcpTool, len(tools))
	for i, t := range tools {
		mt := mcpTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: mcpserver.ObjectSchema(t.Parameters), Icons: mcpserver.Icons(t.Icon)}
		if len(t.OutputSchema) > 0 {
			mt.OutputSchema = mcpserver.ObjectSchema(t.OutputSchema)
		}
		if a := t.Annotations; a != nil {
			mt.Annotations = &mcpAnnotations{
				Title: t.Title, ReadOnlyHint: a.ReadOnly, DestructiveHint: a.Destructive,
				IdempotentHint: a.Idempotent, OpenWorldHint: a.OpenWorld,
			}
		}
		out[i] = mt
	}
	return map[string][]mcpTool{"tools": out}
}
