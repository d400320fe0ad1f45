// Command notes is a toolhost sample plugin with a destructive tool:
// add_note, list_notes and delete_note (annotated destructive and
// needs_approval, so by default a person approves each call).
//
// Notes live in the plugin's instance memory (the manifest opts in to
// reuse_instances): they last while the host keeps that instance, and are
// gone after a restart. Each worker process has its own instance, so under
// concurrent calls a list shows only the notes of the instance that
// answered: a demo of reused state, not a store. The plugin has no file or network grant.
//
// Built as a WASI reactor (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared).
package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/extism/go-pdk"

	"github.com/toolhost/toolhost/sample-plugins/internal/guest"
)

var (
	notes  = map[string]string{}
	nextID = 1
)

type note struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

//go:wasmexport add_note
func addNote() int32 {
	var args struct {
		Text *string `json:"text"`
	}
	if err := guest.DecodeArgs(pdk.Input(), &args); err != nil {
		return guest.Fail(err)
	}
	if args.Text == nil {
		return guest.Fail(errors.New("text is required"))
	}
	id := strconv.Itoa(nextID)
	nextID++
	notes[id] = *args.Text
	return guest.Succeed(note{ID: id, Text: *args.Text})
}

//go:wasmexport list_notes
func listNotes() int32 {
	out := make([]note, 0, len(notes))
	for id, text := range notes {
		out = append(out, note{ID: id, Text: text})
	}
	sort.Slice(out, func(i, j int) bool { // ids are decimal: 2 before 10
		if len(out[i].ID) != len(out[j].ID) {
			return len(out[i].ID) < len(out[j].ID)
		}
		return out[i].ID < out[j].ID
	})
	return guest.Succeed(map[string]any{"notes": out})
}

//go:wasmexport delete_note
func deleteNote() int32 {
	var args struct {
		ID *string `json:"id"`
	}
	if err := guest.DecodeArgs(pdk.Input(), &args); err != nil {
		return guest.Fail(err)
	}
	if args.ID == nil {
		return guest.Fail(errors.New("id is required"))
	}
	_, had := notes[*args.ID]
	delete(notes, *args.ID)
	return guest.Succeed(map[string]any{"id": *args.ID, "deleted": had, "message": fmt.Sprintf("note %s %s", guest.Clip(*args.ID), map[bool]string{true: "deleted", false: "did not exist"}[had])})
}

func main() {}
