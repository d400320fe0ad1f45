package mcpserver

import (
	"bytes"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/plugin"
)

// addToolFields carries a tool's signed output schema, title and
// annotations into its MCP definition. Absent annotations stay absent (MCP
// clients then assume the spec's defaults); present ones are sent in full,
// destructive and open_world explicitly, since MCP defaults those to true.
func addToolFields(tool *mcp.Tool, t host.ToolInfo) {
	if len(t.OutputSchema) > 0 {
		tool.OutputSchema = ObjectSchema(bytes.Clone(t.OutputSchema))
	}
	if a := t.Annotations; a != nil {
		destructive, openWorld := a.Destructive, a.OpenWorld
		tool.Title = a.Title
		tool.Annotations = &mcp.ToolAnnotations{
			Title: a.Title, ReadOnlyHint: a.ReadOnly, DestructiveHint: &destructive,
			IdempotentHint: a.Idempotent, OpenWorldHint: &openWorld,
		}
	}
	tool.Icons = Icons(t.Icon)
}

// Icons is a tool's MCP icons for its manifest icon (a data: URI): none
// when it has none. The icon was checked when the manifest was read; a bad
// one is left out.
func Icons(dataURI string) []mcp.Icon {
	if dataURI == "" {
		return nil
	}
	mimeType, img, err := plugin.ParseIcon(dataURI)
	if err != nil {
		return nil
	}
	icon := mcp.Icon{Source: dataURI, MIMEType: mimeType}
	if size := plugin.IconSize(img); size != "" {
		icon.Sizes = []string{size}
	}
	return []mcp.Icon{icon}
}

// governanceDefinition is the part of what a client sees that comes from
// the wave-2 tool fields.
func governanceDefinition(t host.ToolInfo) string {
	a := "none"
	if t.Annotations != nil {
		a = fmt.Sprintf("%+v", *t.Annotations)
	}
	return string(t.OutputSchema) + "\x00" + a + "\x00" + t.Icon
}
