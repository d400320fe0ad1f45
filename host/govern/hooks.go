package govern

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/internal/clip"
	"github.com/toolhost/toolhost/internal/strictjson"
	"github.com/toolhost/toolhost/plugin"
)

// MaxHookAnswerBytes bounds what a hook may answer (it is parsed in the
// host).
const MaxHookAnswerBytes = 4 << 20

// HookTarget is one hook of an installed policy plugin, with a way to run
// its export sandboxed under that plugin's signed limits.
type HookTarget = host.PolicyHook

// hookName is how errors and the audit log name a hook:
// "hook:PLUGIN/EXPORT".
func hookName(h HookTarget) string { return "hook:" + h.Plugin + "/" + h.Hook.Export }

// HookSource lists the hooks of the installed policy plugins
// (Host.PolicyHooks).
type HookSource func() []HookTarget

// hooksFor returns the hooks of event that see tool, in ascending
// priority, ties by plugin name (then export, so the order is total).
func hooksFor(all []HookTarget, event, tool string) []HookTarget {
	var out []HookTarget
	for _, h := range all {
		if h.Hook.Event == event && h.Hook.Sees(tool) {
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Hook.Priority != b.Hook.Priority {
			return a.Hook.Priority < b.Hook.Priority
		}
		if a.Plugin != b.Plugin {
			return a.Plugin < b.Plugin
		}
		return a.Hook.Export < b.Hook.Export
	})
	return out
}

type beforeInput struct {
	Tool      string          `json:"tool"`
	Plugin    string          `json:"plugin"`
	Arguments json.RawMessage `json:"arguments"`
	Entry     string          `json:"entry"`
}

type afterInput struct {
	Tool      string          `json:"tool"`
	Plugin    string          `json:"plugin"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
}

// hookAnswer is what a hook answers. before_call: action allow, deny
// (reason) or rewrite (arguments). after_call: result, or action deny (or
// allow: result unchanged).
type hookAnswer struct {
	Action    string          `json:"action"`
	Reason    string          `json:"reason"`
	Arguments json.RawMessage `json:"arguments"`
	Result    json.RawMessage `json:"result"`
}

var answerShape = strictjson.Object{
	"action": strictjson.Any{}, "reason": strictjson.Any{}, "arguments": strictjson.Any{}, "result": strictjson.Any{},
}

// hookVerdict is one hook's parsed answer.
type hookVerdict struct {
	deny      string          // reason; "" unless denied
	arguments json.RawMessage // before_call rewrite
	result    json.RawMessage // after_call replacement
}

// parseAnswer reads a hook's output strictly. Anything that is not one of
// the answers its event allows is an error (and the call is refused).
func parseAnswer(event string, out []byte) (hookVerdict, error) {
	if len(out) > MaxHookAnswerBytes {
		return hookVerdict{}, fmt.Errorf("answered %d bytes, the limit is %d", len(out), MaxHookAnswerBytes)
	}
	var a hookAnswer
	if err := strictjson.Decode(bytes.TrimSpace(out), answerShape, &a); err != nil {
		return hookVerdict{}, fmt.Errorf("answered something that is not a hook answer: %v", err)
	}
	isObject := func(raw json.RawMessage) bool {
		raw = bytes.TrimSpace(raw)
		return len(raw) > 0 && raw[0] == '{'
	}
	switch {
	case a.Action == "deny" && a.Arguments == nil && a.Result == nil:
		if a.Reason == "" {
			a.Reason = "no reason given"
		}
		// The reason reaches terminals, logs and the model: a hook must
		// not clear a screen or forge a line with it.
		return hookVerdict{deny: clip.Printable(a.Reason)}, nil
	case event == plugin.HookBeforeCall && a.Action == "allow" && a.Reason == "" && a.Arguments == nil && a.Result == nil:
		return hookVerdict{}, nil
	case event == plugin.HookBeforeCall && a.Action == "rewrite" && a.Reason == "" && isObject(a.Arguments) && a.Result == nil:
		return hookVerdict{arguments: a.Arguments}, nil
	case event == plugin.HookAfterCall && a.Action == "" && a.Reason == "" && a.Arguments == nil && a.Result != nil:
		return hookVerdict{result: a.Result}, nil
	case event == plugin.HookAfterCall && a.Action == "allow" && a.Reason == "" && a.Arguments == nil && a.Result == nil:
		return hookVerdict{}, nil
	}
	if event == plugin.HookBeforeCall {
		return hookVerdict{}, fmt.Errorf(`answered %s; a before_call hook answers {"action":"allow"}, {"action":"deny","reason":"…"} or {"action":"rewrite","arguments":{…}}`, shownAnswer(out))
	}
	return hookVerdict{}, fmt.Errorf(`answered %s; an after_call hook answers {"result":…} or {"action":"deny","reason":"…"}`, shownAnswer(out))
}

// shownAnswer is a hook's answer as an error quotes it: its start, whole
// characters, printable.
func shownAnswer(b []byte) string {
	start, _, cut := clip.Middle(string(b), 120, 0)
	if cut {
		start += "…"
	}
	return clip.Printable(start)
}
