package content

import "encoding/json"

// MarshalJSON writes the block in the MCP content-block shape (data and
// blob base64 again), which is also what the HTTP API returns under
// {"result":{"content":[…]}}.
func (b Block) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case TypeText:
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text})
	case TypeImage, TypeAudio:
		return json.Marshal(struct {
			Type     string `json:"type"`
			Data     []byte `json:"data"`
			MIMEType string `json:"mimeType"`
		}{b.Type, b.Data, b.MIMEType})
	case TypeResourceLink:
		return json.Marshal(struct {
			Type        string `json:"type"`
			URI         string `json:"uri"`
			Name        string `json:"name"`
			Title       string `json:"title,omitempty"`
			Description string `json:"description,omitempty"`
			MIMEType    string `json:"mimeType,omitempty"`
		}{b.Type, b.URI, b.Name, b.Title, b.Description, b.MIMEType})
	default:
		return json.Marshal(struct {
			Type     string    `json:"type"`
			Resource *Resource `json:"resource"`
		}{b.Type, b.Resource})
	}
}

// MarshalJSON writes exactly one of text and blob, as the plugin sent it.
func (r *Resource) MarshalJSON() ([]byte, error) {
	if r.Blob != nil {
		return json.Marshal(struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Blob     []byte `json:"blob"`
		}{r.URI, r.MIMEType, r.Blob})
	}
	return json.Marshal(struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
	}{r.URI, r.MIMEType, r.Text})
}
