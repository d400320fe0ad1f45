package httpapi

import "testing"

func BenchmarkParseCallBody(b *testing.B) {
	in := []byte(`{"arguments":{"query":"weather in Paris","units":"metric","days":3,"lang":"en"}}`)
	for name, parse := range map[string]func([]byte) ([]byte, error){
		"members": func(in []byte) ([]byte, error) {
			a, err := parseCallBody(in)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
		"reference": func(in []byte) ([]byte, error) {
			a, err := referenceParseCallBody(in)
			if err != nil {
				return nil, err
			}
			return a, nil
		},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parse(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
