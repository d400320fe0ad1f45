package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/host/content"
)

// mcpContent maps parsed envelope blocks (already validated by
// content.Parse) to the SDK's content types, one for one.
func mcpContent(blocks []content.Block) []mcp.Content {
	out := make([]mcp.Content, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case content.TypeText:
			out = append(out, &mcp.TextContent{Text: b.Text})
		case content.TypeImage:
			out = append(out, &mcp.ImageContent{Data: b.Data, MIMEType: b.MIMEType})
		case content.TypeAudio:
			out = append(out, &mcp.AudioContent{Data: b.Data, MIMEType: b.MIMEType})
		case content.TypeResourceLink:
			out = append(out, &mcp.ResourceLink{URI: b.URI, Name: b.Name, Title: b.Title, Description: b.Description, MIMEType: b.MIMEType})
		case content.TypeResource:
			out = append(out, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: b.Resource.URI, MIMEType: b.Resource.MIMEType, Text: b.Resource.Text, Blob: b.Resource.Blob,
			}})
		}
	}
	return out
}
