package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/toolhost/toolhost/api/control"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/plugin"
)

// withSettings runs f with the settings API of this home: the running
// host's over its control socket, or one opened in this process.
func (g *globalOptions) withSettings(ctx context.Context, f func(s control.Settings) error) error {
	api, closeHost, err := g.openAPI(ctx)
	if err != nil {
		return err
	}
	defer closeHost()
	s, ok := api.(control.Settings)
	if !ok {
		return fmt.Errorf("this toolhost build does not serve plugin settings on its control socket; restart `toolhost serve`")
	}
	return f(s)
}

func newSecretCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Set, list and remove the secrets plugins send to their bound hosts",
		Long: `A plugin's manifest declares the secrets it uses and the hosts each may be
sent to ("secrets" in plugin.json). The operator sets their values here; they are
stored encrypted (XChaCha20-Poly1305, key in $TOOLHOST_HOME/secrets.key) and never
enter the sandbox: toolhost.http_fetch adds a secret as its header only to the
requests that ask for it and only when they go to a host it is bound to.`,
	}
	cmd.AddCommand(newSecretSetCmd(g), newSecretListCmd(g), newSecretRemoveCmd(g))
	return cmd
}

func newSecretSetCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "set PLUGIN NAME",
		Short: "Set a secret's value, read from stdin or typed at a prompt (never from the command line)",
		Long: `The value is read from stdin (one trailing newline is removed), or, when stdin
is a terminal, typed at a prompt without echo. It is never taken from the
command line, where shell history and the process list would keep it.`,
		Example: "  toolhost secret set fetch api_token            # prompts\n  printf %s \"$TOKEN\" | toolhost secret set fetch api_token",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 2 {
				return usageError{errors.New("secret set takes PLUGIN NAME only: the value is never read from the command line (shell history, ps); pipe it on stdin or type it at the prompt")}
			}
			if len(args) < 2 {
				return usageError{errors.New("secret set needs PLUGIN NAME (see `toolhost secret list PLUGIN` for the names)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := plugin.ValidSecretName(args[1]); err != nil {
				return usageError{fmt.Errorf("secret name: %w", err)}
			}
			return g.withSettings(cmd.Context(), func(s control.Settings) error {
				// Check the name before asking for the value.
				list, err := s.Secrets(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(list, func(st host.SecretStatus) bool { return st.Name == args[1] }) {
					return fmt.Errorf("%w: plugin %s declares no secret %q (see `toolhost secret list %s`)", host.ErrInvalidSetting, args[0], args[1], args[0])
				}
				value, err := g.readSecretValue(fmt.Sprintf("Value of secret %s for plugin %s: ", args[1], args[0]))
				if err != nil {
					return err
				}
				if err := s.SetSecret(cmd.Context(), args[0], args[1], value); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "secret %s of plugin %s set\n", args[1], args[0])
				return nil
			})
		},
	}
}

// readSecretValue reads a secret from stdin, or from a no-echo prompt when
// stdin is a terminal.
func (g *globalOptions) readSecretValue(prompt string) (string, error) {
	if f, ok := g.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(g.stderr, prompt)
		v, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(g.stderr)
		if err != nil {
			return "", fmt.Errorf("read the secret: %w", err)
		}
		if len(v) == 0 {
			return "", errors.New("empty value: type the secret, or pipe it on stdin")
		}
		return string(v), nil
	}
	data, err := io.ReadAll(io.LimitReader(g.stdin, plugin.MaxSecretValueLen+3))
	if err != nil {
		return "", fmt.Errorf("read the secret from stdin: %w", err)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	if len(data) == 0 {
		return "", errors.New("no value on stdin: pipe the secret in (printf %s \"$TOKEN\" | toolhost secret set PLUGIN NAME), or run it in a terminal to be prompted")
	}
	if err := plugin.ValidSecretValue(string(data)); err != nil {
		return "", fmt.Errorf("the secret read from stdin: %w", err)
	}
	return string(data), nil
}

func newSecretListCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "list PLUGIN",
		Short:   "List the secrets a plugin declares, where each may be sent and whether it is set (never the values)",
		Example: "  toolhost secret list fetch",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withSettings(cmd.Context(), func(s control.Settings) error {
				list, err := s.Secrets(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if len(list) == 0 {
					fmt.Fprintf(g.stdout, "plugin %s declares no secrets\n", args[0])
					return nil
				}
				tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSET\tHEADER\tHOSTS")
				for _, st := range list {
					set := "no"
					if st.Set {
						set = "yes"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", st.Name, set, st.Header, strings.Join(st.Hosts, ", "))
				}
				return tw.Flush()
			})
		},
	}
}

func newSecretRemoveCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "remove PLUGIN NAME",
		Short:   "Remove a secret's value (the plugin's requests that ask for it fail until it is set again)",
		Example: "  toolhost secret remove fetch api_token",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withSettings(cmd.Context(), func(s control.Settings) error {
				if err := s.RemoveSecret(cmd.Context(), args[0], args[1]); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "secret %s of plugin %s removed\n", args[1], args[0])
				return nil
			})
		},
	}
}

func newPluginConfigCmd(g *globalOptions) *cobra.Command {
	var unset []string
	cmd := &cobra.Command{
		Use:   "config PLUGIN [KEY=VALUE...] [--unset KEY]...",
		Short: "Show or change a plugin's configuration (checked against the config schema in its manifest)",
		Long: `With only PLUGIN, prints the values set. KEY=VALUE sets a value, --unset KEY
removes one; all changes of one command are checked together against the
"config" schema of the plugin's manifest (so several required keys can be set
at once) and take effect on the next call. The plugin reads the values as
strings with its PDK's config functions. Secrets do not belong here: use
` + "`toolhost secret set`" + `.`,
		Example: "  toolhost plugin config weather\n  toolhost plugin config weather units=metric lang=en\n  toolhost plugin config weather --unset lang",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			set := map[string]string{}
			for _, a := range args[1:] {
				k, v, ok := strings.Cut(a, "=")
				if !ok || k == "" {
					return usageError{fmt.Errorf("%q: write KEY=VALUE", a)}
				}
				set[k] = v
			}
			return g.withSettings(cmd.Context(), func(s control.Settings) error {
				cfg, err := s.Config(cmd.Context(), args[0])
				if len(set) > 0 || len(unset) > 0 {
					cfg, err = s.SetConfig(cmd.Context(), args[0], set, unset)
				}
				if err != nil {
					return err
				}
				if len(cfg) == 0 {
					fmt.Fprintf(g.stdout, "plugin %s: no configuration set\n", args[0])
					return nil
				}
				keys := make([]string, 0, len(cfg))
				for k := range cfg {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					fmt.Fprintf(g.stdout, "%s=%s\n", k, cfg[k])
				}
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&unset, "unset", nil, "remove the value of KEY (repeatable)")
	return cmd
}

// settingsText describes a manifest's config schema and secret bindings,
// for review and inspect ("" when it declares neither).
func settingsText(m *plugin.Manifest) string {
	var b strings.Builder
	if m.Config != nil {
		fmt.Fprintf(&b, "config:   %s\n", visible(oneLine(string(m.Config))))
	}
	for _, name := range m.SecretNames() {
		s := m.Secrets[name]
		prefix := ""
		if s.Prefix != "" {
			prefix = fmt.Sprintf(" (prefix %q)", s.Prefix)
		}
		fmt.Fprintf(&b, "secret:   %s, sent as header %s%s only to %s\n", terminalSafe(name), terminalSafe(s.Header), prefix, terminalSafe(strings.Join(s.Hosts, ", ")))
	}
	return b.String()
}
