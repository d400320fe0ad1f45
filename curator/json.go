package curator

import "encoding/json"

func marshalIndent(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // only called on types that always marshal
	}
	return append(b, '\n')
}
