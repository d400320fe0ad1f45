package host

import (
	"bytes"
	"errors"

	"github.com/toolhost/toolhost/host/toolerr"
	"github.com/toolhost/toolhost/internal/strictjson"
)

// arguments parses a call's arguments once, bounded (size, depth, number
// literals, validation cost), and validates them against the tool's
// schema. It returns the bytes the plugin receives: exactly what was
// validated.
func (h *Host) arguments(ref *toolRef, args []byte) ([]byte, *toolerr.Error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if len(args) > h.opts.MaxArgumentBytes {
		return nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "arguments are %d bytes, the limit is %d", len(args), h.opts.MaxArgumentBytes)
	}
	if args[0] != '{' {
		return nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "arguments must be a JSON object")
	}
	// One strict parse: duplicate keys would let the schema validator and
	// the plugin read different values from the same arguments, and the
	// bounds keep what the validator does with the value cheap.
	v, err := strictjson.Parse(args, strictjson.ValueLimits{})
	if err != nil {
		if errors.Is(err, strictjson.ErrBounds) {
			return nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "arguments refused: %s", strictjson.Detail(err))
		}
		return nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "arguments are not valid JSON: %s", strictjson.Detail(err))
	}
	if err := ref.schema.CheckCost(v.Nodes); err != nil {
		return nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "%v", err)
	}
	if err := ref.schema.CheckTextCost(v.V); err != nil {
		return nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "%v", err)
	}
	if err := ref.schema.Validate(v.V); err != nil {
		return nil, toolerr.Errorf(toolerr.CodeInvalidArguments, "%v", err)
	}
	return args, nil
}
