package mcpserver

import (
	"bytes"
	"encoding/json"
)

// ObjectSchema returns a tool's parameters or output schema as MCP's Tool
// takes them. The specification types each member of inputSchema's and
// outputSchema's properties as an object, and the official TypeScript SDK
// (v1) refuses a whole tools/list result in which one is a boolean schema,
// so one plugin's `"properties": {"any": true}` would hide every tool from
// that client. A top-level property schema true is written {} and false
// {"not": {}}, which accept exactly the same values; everything else keeps
// its signed bytes, and a schema with no boolean property is returned as
// it is.
func ObjectSchema(raw json.RawMessage) json.RawMessage {
	root, ok := objectMembers(raw)
	if !ok {
		return raw
	}
	changed := false
	for i, m := range root {
		if m.key != "properties" {
			continue
		}
		props, ok := objectMembers(m.value)
		if !ok {
			return raw
		}
		for j, p := range props {
			switch string(bytes.TrimSpace(p.value)) {
			case "true":
				props[j].value, changed = json.RawMessage(`{}`), true
			case "false":
				props[j].value, changed = json.RawMessage(`{"not":{}}`), true
			}
		}
		root[i].value = encodeMembers(props)
	}
	if !changed {
		return raw
	}
	return encodeMembers(root)
}

type rawMember struct {
	key   string
	value json.RawMessage
}

// objectMembers splits a JSON object into its members, in order, each
// value as its own bytes; ok is false when data is not an object.
func objectMembers(data json.RawMessage) ([]rawMember, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var members []rawMember
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		members = append(members, rawMember{key, v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	return members, true
}

func encodeMembers(members []rawMember) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(m.key)
		b.Write(key)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
