// Package content parses the output envelope a plugin uses to return several
// content blocks (text, image, audio, resource link, embedded resource)
// instead of one JSON value:
//
//	{"toolhost_content": [
//	  {"type": "text", "text": "…"},
//	  {"type": "image", "data": "<base64>", "mimeType": "image/png"},
//	  {"type": "audio", "data": "<base64>", "mimeType": "audio/wav"},
//	  {"type": "resource_link", "uri": "…", "name": "…"},
//	  {"type": "resource", "resource": {"uri": "…", "mimeType": "…", "text": "…"}}
//	]}
//
// What Parse guarantees: an output is an envelope only when it is a JSON
// object whose only key is exactly "toolhost_content"; anything else is an
// ordinary result and stays as it is. An envelope is accepted only whole:
// 1 to MaxBlocks blocks, each of a known type with exactly the fields that
// type allows (spelled exactly, none repeated), base64 that decodes
// (standard alphabet, padded), media types that parse and belong to the
// block's kind, and URIs with a scheme. One bad block fails the call with
// a plugin_error that names the block and what to fix.
//
// What it does not do: bound the size of the data (the manifest's
// max_output_bytes already bounds the whole output, envelope included),
// look inside the data (an "image" is any bytes the plugin labels so), or
// fetch anything a URI names.
package content

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"strings"

	"github.com/toolhost/toolhost/host/toolerr"
)

// Key is the envelope's only key. It carries the product's name so that an
// ordinary result object does not take this shape by accident.
const Key = "toolhost_content"

// MaxBlocks bounds the blocks of one envelope.
const MaxBlocks = 64

// Block types.
const (
	TypeText         = "text"
	TypeImage        = "image"
	TypeAudio        = "audio"
	TypeResourceLink = "resource_link"
	TypeResource     = "resource"
)

// Block is one parsed content block. Which fields are set depends on Type:
// text has Text; image and audio have Data (decoded) and MIMEType;
// resource_link has URI, Name and optionally Title, Description and
// MIMEType; resource has Resource.
type Block struct {
	Type        string
	Text        string
	Data        []byte
	MIMEType    string
	URI         string
	Name        string
	Title       string
	Description string
	Resource    *Resource
}

// Resource is the body of an embedded resource block: exactly one of Text
// and Blob (Blob is non-nil when the plugin sent "blob").
type Resource struct {
	URI      string
	MIMEType string
	Text     string
	Blob     []byte
}

// Parse reads out, a tool's result JSON. It returns ok false (and no error)
// for an ordinary result, the blocks for a valid envelope, and a
// *toolerr.Error with code plugin_error for a malformed one.
func Parse(out []byte) (blocks []Block, ok bool, err error) {
	trimmed := bytes.TrimSpace(out)
	// Cheap test first: results are often large and rarely envelopes.
	if len(trimmed) == 0 || trimmed[0] != '{' || !bytes.Contains(trimmed, []byte(`"`+Key+`"`)) {
		return nil, false, nil
	}
	fields, err := objectFields(trimmed)
	if err != nil {
		return nil, false, nil // not an object we can read: an ordinary result
	}
	raw, has := fields[Key]
	if !has {
		return nil, false, nil
	}
	if len(fields) != 1 {
		return nil, true, malformed("the object holding %q must have no other keys (found %d)", Key, len(fields))
	}
	blocks, err = parseBlocks(raw)
	if err != nil {
		return nil, true, malformed("%v", err)
	}
	return blocks, true, nil
}

func malformed(format string, args ...any) *toolerr.Error {
	return toolerr.Errorf(toolerr.CodePluginError,
		"the plugin returned a malformed %s envelope: %s; the plugin must be fixed (see docs/plugin-authoring.md, \"Several content blocks\")",
		Key, fmt.Sprintf(format, args...))
}

func parseBlocks(raw json.RawMessage) ([]Block, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, fmt.Errorf("%q must be an array of block objects", Key)
	}
	if len(items) == 0 || len(items) > MaxBlocks {
		return nil, fmt.Errorf("it has %d blocks; give 1 to %d", len(items), MaxBlocks)
	}
	blocks := make([]Block, 0, len(items))
	for i, item := range items {
		b, err := parseBlock(item)
		if err != nil {
			return nil, fmt.Errorf("block %d: %v", i, err)
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// allowed lists each block type's fields: required ones first, then the
// optional ones after the count.
var allowed = map[string]struct {
	required []string
	optional []string
}{
	TypeText:         {[]string{"type", "text"}, nil},
	TypeImage:        {[]string{"type", "data", "mimeType"}, nil},
	TypeAudio:        {[]string{"type", "data", "mimeType"}, nil},
	TypeResourceLink: {[]string{"type", "uri", "name"}, []string{"title", "description", "mimeType"}},
	TypeResource:     {[]string{"type", "resource"}, nil},
}

func parseBlock(raw json.RawMessage) (Block, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return Block{}, err
	}
	typ, err := stringField(fields, "type")
	if err != nil {
		return Block{}, err
	}
	spec, known := allowed[typ]
	if !known {
		return Block{}, fmt.Errorf("unknown type %q; use text, image, audio, resource_link or resource", typ)
	}
	if err := checkKeys(fields, spec.required, spec.optional); err != nil {
		return Block{}, fmt.Errorf("%s block: %v", typ, err)
	}
	b := Block{Type: typ}
	str := func(name string) string {
		if err != nil {
			return ""
		}
		var s string
		s, err = stringField(fields, name)
		return s
	}
	switch typ {
	case TypeText:
		b.Text = str("text")
	case TypeImage, TypeAudio:
		b.MIMEType = str("mimeType")
		data := str("data")
		if err == nil {
			err = checkMediaType(b.MIMEType, typ+"/")
		}
		if err == nil {
			b.Data, err = decodeBase64("data", data)
		}
	case TypeResourceLink:
		b.URI, b.Name = str("uri"), str("name")
		b.Title, b.Description, b.MIMEType = str("title"), str("description"), str("mimeType")
		if err == nil {
			err = checkURI(b.URI)
		}
		if err == nil && b.Name == "" {
			err = errors.New(`"name" must not be empty`)
		}
		if err == nil && b.MIMEType != "" {
			err = checkMediaType(b.MIMEType, "")
		}
	case TypeResource:
		b.Resource, err = parseResource(fields["resource"])
	}
	if err != nil {
		return Block{}, fmt.Errorf("%s block: %v", typ, err)
	}
	return b, nil
}

func parseResource(raw json.RawMessage) (*Resource, error) {
	fields, err := objectFields(raw)
	if err != nil {
		return nil, fmt.Errorf(`"resource": %v`, err)
	}
	_, hasText := fields["text"]
	_, hasBlob := fields["blob"]
	body := "text"
	if hasBlob {
		body = "blob"
	}
	if hasText == hasBlob {
		return nil, errors.New(`"resource" needs exactly one of "text" and "blob"`)
	}
	if err := checkKeys(fields, []string{"uri", "mimeType", body}, nil); err != nil {
		return nil, fmt.Errorf(`"resource": %v`, err)
	}
	r := &Resource{}
	if r.URI, err = stringField(fields, "uri"); err != nil {
		return nil, err
	}
	if r.MIMEType, err = stringField(fields, "mimeType"); err != nil {
		return nil, err
	}
	if err := checkURI(r.URI); err != nil {
		return nil, fmt.Errorf(`"resource": %v`, err)
	}
	if err := checkMediaType(r.MIMEType, ""); err != nil {
		return nil, fmt.Errorf(`"resource": %v`, err)
	}
	s, err := stringField(fields, body)
	if err != nil {
		return nil, err
	}
	if hasText {
		r.Text = s
	} else if r.Blob, err = decodeBase64("blob", s); err != nil {
		return nil, err
	}
	return r, nil
}

// objectFields reads one JSON object into its fields, refusing duplicate
// keys (encoding/json would keep the last) and anything after the object.
func objectFields(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errors.New("expected a JSON object")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		key, _ := tok.(string)
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		fields[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the object")
	}
	return fields, nil
}

// checkKeys requires every key in required and allows those in optional;
// any other key is an error, so a misspelt field is caught, not dropped.
func checkKeys(fields map[string]json.RawMessage, required, optional []string) error {
	for _, k := range required {
		if _, ok := fields[k]; !ok {
			return fmt.Errorf("missing %q", k)
		}
	}
	for k := range fields {
		if !contains(required, k) && !contains(optional, k) {
			return fmt.Errorf("unknown field %q (allowed: %s)", k, strings.Join(append(append([]string(nil), required...), optional...), ", "))
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// stringField returns an optional field as a string ("" when absent).
func stringField(fields map[string]json.RawMessage, name string) (string, error) {
	raw, ok := fields[name]
	if !ok {
		return "", nil
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("%q must be a string", name)
	}
	return s, nil
}

func decodeBase64(name, s string) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%q is not valid base64 (standard alphabet, padded): %v", name, err)
	}
	if len(b) == 0 && name == "data" {
		return nil, fmt.Errorf("%q is empty", name)
	}
	return b, nil
}

// checkMediaType requires a well-formed type/subtype (parameters allowed)
// starting with prefix when prefix is set.
func checkMediaType(mt, prefix string) error {
	parsed, _, err := mime.ParseMediaType(mt)
	if err != nil || !strings.Contains(parsed, "/") {
		return fmt.Errorf(`"mimeType" %q is not a media type like "image/png"`, mt)
	}
	if prefix != "" && !strings.HasPrefix(parsed, prefix) {
		return fmt.Errorf(`"mimeType" %q must start with %q for this block type`, mt, prefix)
	}
	return nil
}

func checkURI(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf(`"uri" %q is not an absolute URI (it needs a scheme, e.g. "file:///report.txt")`, s)
	}
	return nil
}
