package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/host/toolerr"
)

// GET /openapi.json describes the tool routes as an OpenAPI 3.1 document,
// one operation per installed tool (POST /v1/tools/NAME/call), so that a
// client generator makes a typed function per tool. It is built per request
// from the tools callable now.
//
// Each tool's parameters (and output schema, when the manifest has one)
// become a component schema, NAME.arguments (NAME.result); "." cannot occur
// in a tool name, so the keys cannot collide. A schema's local references
// ("#/$defs/x") meant its own root; inside the document they are rewritten
// to point below its component.

// callErrorCodes are the codes a call can answer with, with the codes the
// HTTP layer adds. Their statuses come from statusFor, so the document
// follows any change there.
var callErrorCodes = []toolerr.Code{
	toolerr.CodeInvalidArguments, CodeInvalidRequest, CodeUnauthorized, CodeForbidden,
	toolerr.CodeDenied, toolerr.CodeToolNotFound, CodePayloadTooLarge,
	toolerr.CodeMemoryLimit, toolerr.CodeOutputTooLarge, toolerr.CodePluginError,
	toolerr.CodeInvalidModule, toolerr.CodePermissionDenied, toolerr.CodeBusy,
	toolerr.CodeInternal, toolerr.CodeUnavailable, toolerr.CodeTimeout,
	CodeRequestTimeout,
}

func (a *API) openAPI(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	doc, err := openAPIDocument(viewsOf(a.b.Tools()), a.opts.Version, scheme+"://"+r.Host)
	if err != nil {
		// Not for an installed tool: the manifest parser already refused
		// duplicate keys and nesting deeper than decodeTree takes.
		writeError(w, toolerr.Errorf(toolerr.CodeInternal, "cannot build the OpenAPI document: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// openAPIDocument builds the document for tools, served at serverURL.
func openAPIDocument(tools []toolView, version, serverURL string) (*object, error) {
	if version == "" {
		version = "dev"
	}
	paths, schemas := &object{}, &object{}
	var tags []string
	for _, t := range tools {
		args, err := componentSchema(t.Parameters, t.Name+".arguments")
		if err != nil {
			return nil, fmt.Errorf("tool %s: parameters: %v", t.Name, err)
		}
		schemas.set(t.Name+".arguments", args)
		result := any(obj("description", "The tool's output: its JSON when the plugin returned JSON, else the text as a string."))
		if len(t.OutputSchema) > 0 {
			out, err := componentSchema(t.OutputSchema, t.Name+".result")
			if err != nil {
				return nil, fmt.Errorf("tool %s: output schema: %v", t.Name, err)
			}
			schemas.set(t.Name+".result", out)
			result = ref("#/components/schemas/" + t.Name + ".result")
		}
		paths.set("/v1/tools/"+t.Name+"/call", obj("post", callOperation(t, result)))
		if !slices.Contains(tags, t.Plugin) {
			tags = append(tags, t.Plugin)
		}
	}
	slices.Sort(tags)
	tagList := make([]any, len(tags))
	for i, tag := range tags {
		tagList[i] = obj("name", tag, "description", "Tools of the plugin "+tag)
	}
	responses := &object{}
	for _, group := range errorStatuses() {
		responses.set(group.name, errorResponse(group))
	}
	return obj(
		"openapi", "3.1.0",
		"info", obj(
			"title", "toolhost tools",
			"version", version,
			"description", "The tools installed in this toolhost, one operation each. Every call is checked against the tool's parameters and runs sandboxed under the limits its signed manifest declares.",
		),
		"servers", []any{obj("url", serverURL)},
		"security", []any{obj("bearerAuth", []any{})},
		"tags", tagList,
		"paths", paths,
		"components", obj(
			"securitySchemes", obj("bearerAuth", obj(
				"type", "http", "scheme", "bearer",
				"description", "The token in $TOOLHOST_HOME/token (or TOOLHOST_TOKEN).",
			)),
			"schemas", schemas,
			"responses", responses,
		),
	), nil
}

func callOperation(t toolView, result any) *object {
	summary := t.Title
	if summary == "" {
		summary = t.Name
	}
	responses := obj("200", obj(
		"description", "The tool ran and returned a result.",
		"content", jsonContent(obj(
			"type", "object",
			"properties", obj("result", result),
			"required", []any{"result"},
			"additionalProperties", false,
		)),
	))
	for _, group := range errorStatuses() {
		responses.set(fmt.Sprint(group.status), ref("#/components/responses/"+group.name))
	}
	op := obj(
		"operationId", t.Name,
		"summary", summary,
		"description", t.Description,
		"tags", []any{t.Plugin},
		"requestBody", obj(
			"required", true,
			"content", jsonContent(obj(
				"type", "object",
				"properties", obj("arguments", ref("#/components/schemas/"+t.Name+".arguments")),
				"required", []any{"arguments"},
				"additionalProperties", false,
			)),
		),
		"responses", responses,
	)
	if t.Plugin != "" {
		op.set("x-toolhost-plugin", obj("name", t.Plugin, "version", t.Version))
	}
	// The manifest's behaviour hints and approval flag have no OpenAPI
	// keyword; extensions carry them for clients that care.
	if a := t.Annotations; a != nil {
		op.set("x-toolhost-annotations", obj(
			"read_only", a.ReadOnly, "destructive", a.Destructive, "idempotent", a.Idempotent, "open_world", a.OpenWorld,
		))
	}
	if t.NeedsApproval {
		op.set("x-toolhost-needs-approval", true)
	}
	return op
}

// errorGroup is one error status and the codes answered with it.
type errorGroup struct {
	status int
	name   string
	codes  []any
}

func errorStatuses() []errorGroup {
	var groups []errorGroup
	for _, code := range callErrorCodes {
		status := statusFor(code)
		i := slices.IndexFunc(groups, func(g errorGroup) bool { return g.status == status })
		if i < 0 {
			groups = append(groups, errorGroup{status: status, name: strings.ReplaceAll(http.StatusText(status), " ", "")})
			i = len(groups) - 1
		}
		groups[i].codes = append(groups[i].codes, string(code))
	}
	slices.SortFunc(groups, func(a, b errorGroup) int { return a.status - b.status })
	return groups
}

func errorResponse(g errorGroup) *object {
	codes := make([]string, len(g.codes))
	for i, c := range g.codes {
		codes[i] = c.(string)
	}
	resp := obj(
		"description", fmt.Sprintf("%s: error code %s; the message says what was wrong and what to do.", http.StatusText(g.status), strings.Join(codes, ", ")),
		"content", jsonContent(obj(
			"type", "object",
			"properties", obj("error", obj(
				"type", "object",
				"properties", obj(
					"code", obj("type", "string", "enum", g.codes),
					"message", obj("type", "string"),
				),
				"required", []any{"code", "message"},
			)),
			"required", []any{"error"},
		)),
	)
	switch g.status {
	case http.StatusTooManyRequests:
		resp.set("headers", obj("Retry-After", obj("description", "Seconds to wait before retrying.", "schema", obj("type", "integer"))))
	case http.StatusUnauthorized:
		resp.set("headers", obj("WWW-Authenticate", obj("description", "The scheme the API expects (Bearer).", "schema", obj("type", "string"))))
	}
	return resp
}

// componentSchema decodes a tool schema and rewrites its local references
// to resolve below #/components/schemas/key.
func componentSchema(raw json.RawMessage, key string) (any, error) {
	tree, err := decodeTree(raw)
	if err != nil {
		return nil, err
	}
	base := "#/components/schemas/" + pointerToken(key)
	walkSchemas(tree, func(o *object) {
		for _, k := range []string{"$ref", "$dynamicRef"} {
			v, _ := o.get(k)
			s, ok := v.(string)
			if !ok {
				continue
			}
			// "#" and "#/…" are pointers from the schema's root; "#name"
			// is an anchor, which names the same place in the document.
			if s == "#" || strings.HasPrefix(s, "#/") {
				o.set(k, base+s[1:])
			}
		}
	})
	return tree, nil
}

// obj builds an ordered object from key, value pairs.
func obj(kv ...any) *object {
	o := &object{members: make([]member, 0, len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		o.members = append(o.members, member{kv[i].(string), kv[i+1]})
	}
	return o
}

func ref(to string) *object { return obj("$ref", to) }

func jsonContent(schema *object) *object {
	return obj("application/json", obj("schema", schema))
}
