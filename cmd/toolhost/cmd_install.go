package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/plugin"
)

func newInstallCmd(g *globalOptions) *cobra.Command {
	var opts host.InstallOptions
	cmd := &cobra.Command{
		Use:   "install BUNDLE",
		Short: "Verify a signed bundle and install it into the store",
		Long: `Verify the bundle against the trust store, refuse versions older than the
highest ever installed under its name, check that the wasm module is acceptable
and exports every tool, and store it durably. Its tools are callable afterwards
(also in a running toolhost serve).

An upgrade prints what changes: permissions, limits and tool definitions. An
upgrade that grants new permissions (hosts, paths) asks for confirmation on a
terminal, or needs --yes.`,
		Example: "  toolhost plugin install time.plugin\n  toolhost plugin install --yes fetch-2.0.0.plugin",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := readBundle(args[0])
			if err != nil {
				return err
			}
			api, closeHost, err := g.openAPI(cmd.Context())
			if err != nil {
				return err
			}
			defer closeHost()
			rep, err := api.Install(cmd.Context(), b, opts)
			if errors.Is(err, host.ErrWidening) {
				printChanges(g.stdout, rep)
				if !confirm(g, "Install anyway and grant these permissions? [y/N] ") {
					return fmt.Errorf("%w; nothing was installed (review the changes, then pass --yes)", err)
				}
				opts.AcceptWidening = true
				rep, err = api.Install(cmd.Context(), b, opts)
			} else if err == nil {
				printChanges(g.stdout, rep)
			}
			if err != nil {
				return err
			}
			signers := "unsigned (dev mode)"
			if len(rep.Decision.Signers) > 0 {
				signers = strings.Join(rep.Decision.Signers, ", ")
			}
			switch {
			case rep.Unchanged:
				fmt.Fprintf(g.stdout, "%s %s is already installed (digest %s)\n", rep.Name, rep.Version, rep.Digest.Short())
			case rep.SignaturesUpdated:
				fmt.Fprintf(g.stdout, "%s %s: signatures updated (now signed by %s; digest %s unchanged)\n", rep.Name, rep.Version, signers, rep.Digest.Short())
			case rep.Previous != nil:
				fmt.Fprintf(g.stdout, "upgraded %s %s -> %s (digest %s, signed by %s)\n", rep.Name, rep.Previous.Version, rep.Version, rep.Digest.Short(), signers)
			default:
				fmt.Fprintf(g.stdout, "installed %s %s (digest %s, signed by %s)\n", rep.Name, rep.Version, rep.Digest.Short(), signers)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.AllowDowngrade, "allow-downgrade", false, "install even if a higher version was installed before")
	cmd.Flags().BoolVarP(&opts.AcceptWidening, "yes", "y", false, "accept an upgrade that grants new permissions without asking")
	return cmd
}

func printChanges(w io.Writer, rep host.InstallReport) {
	if rep.Previous == nil || rep.Unchanged || rep.SignaturesUpdated {
		return
	}
	fmt.Fprintf(w, "changes from %s %s to %s:\n", rep.Name, rep.Previous.Version, rep.Version)
	if len(rep.Changes) == 0 {
		fmt.Fprintln(w, "  (no change to permissions, limits or tool definitions)")
	}
	for _, c := range rep.Changes {
		mark := " "
		if c.Widens {
			mark = "+"
		}
		fmt.Fprintf(w, "  %s %s\n", mark, c.Text)
	}
	if plugin.Widens(rep.Changes) {
		fmt.Fprintln(w, "  (+ = grants the plugin something it did not have)")
	}
}

// confirm asks a yes/no question on the terminal; without one it says no.
func confirm(g *globalOptions, question string) bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil || !term.IsTerminal(int(tty.Fd())) {
		return false
	}
	defer tty.Close()
	fmt.Fprint(tty, question)
	line, _ := bufio.NewReader(tty).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}
