package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

type trustListEntry struct {
	KeyID     string    `json:"key_id"`
	Name      string    `json:"name"`
	PublicKey string    `json:"public_key"`
	AddedAt   time.Time `json:"added_at"`
	Revoked   bool      `json:"revoked"`
}

func newTrustListCmd(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List trusted curator keys and the trust policy",
		Example: "  toolhost trust list\n  toolhost trust list --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			ts, err := api.TrustSet(cmd.Context())
			if err != nil {
				return err
			}
			var entries []trustListEntry
			for id, k := range ts.Keys {
				_, revoked := ts.Revoked[id]
				entries = append(entries, trustListEntry{KeyID: id.String(), Name: k.Name, PublicKey: k.Key.String(), AddedAt: k.AddedAt, Revoked: revoked})
			}
			for id, at := range ts.Revoked {
				if _, listed := ts.Keys[id]; !listed {
					entries = append(entries, trustListEntry{KeyID: id.String(), Name: "(not trusted)", AddedAt: at, Revoked: true})
				}
			}
			sort.Slice(entries, func(i, j int) bool { return entries[i].Name+entries[i].KeyID < entries[j].Name+entries[j].KeyID })
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"keys": entries, "threshold": max(ts.Threshold, 1)})
			}
			fmt.Fprintf(g.stdout, "policy: %d trusted curator signature(s) required\n", max(ts.Threshold, 1))
			if len(entries) == 0 {
				fmt.Fprintln(g.stdout, "no trusted keys (add one with `toolhost trust add CURATOR.pub`)")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY ID\tNAME\tSTATE\tADDED")
			for _, e := range entries {
				state := "trusted"
				if e.Revoked {
					state = "revoked"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.KeyID, e.Name, state, e.AddedAt.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
