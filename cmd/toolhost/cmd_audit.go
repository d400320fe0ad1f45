package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/home"
	"github.com/toolhost/toolhost/host/audit"
)

func newAuditCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "The audit log: every call and change, hash-chained ($TOOLHOST_HOME/audit.jsonl)",
		Long: `The audit log is a plain file, one JSON record per line, appended and made
durable by the process holding the store before it answers (audit.jsonl.wal
holds the records not yet synced in audit.jsonl; after a crash, the next
toolhost command that opens the store puts them back). Each record carries seq,
prev (the hash of the record before) and hash (sha256 of the line without its
hash member), so a changed, deleted, inserted or reordered record breaks the
chain where it happened. Keep ` + "`toolhost audit head`" + ` somewhere else to detect
records cut from the end too. These commands only read the file.`,
	}
	cmd.AddCommand(newAuditListCmd(g), newAuditVerifyCmd(g), newAuditHeadCmd(g))
	return cmd
}

func (g *globalOptions) auditPath() string { return filepath.Join(g.home, audit.FileName) }

// openAuditFile opens the log for reading. A missing log reads as empty
// only in a home where toolhost never opened the store (the log is created
// before it): beside a store, it was deleted or moved, which must not pass
// for an intact empty log. A home that does not exist is an error too: a
// mistyped --home would otherwise verify as intact.
func (g *globalOptions) openAuditFile() (io.ReadCloser, error) {
	f, err := os.Open(g.auditPath())
	if !errors.Is(err, os.ErrNotExist) {
		return f, err
	}
	if _, err := os.Stat(g.home); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the toolhost home %s does not exist, so there is no audit log to read; point --home or TOOLHOST_HOME at the home whose log you mean", g.home)
	}
	storeDir := filepath.Join(g.home, "store")
	if home.StoreExisted(storeDir) {
		return nil, audit.MissingError(g.auditPath(), fmt.Sprintf("the home's store %s exists", storeDir))
	}
	return io.NopCloser(bytes.NewReader(nil)), nil
}

// verifyAuditLog verifies the log, and against its write-ahead file when
// there is one (audit.VerifyDurable): a log cut below what toolhost made
// durable is damaged even without a head kept elsewhere. Both are only
// read, so this works while serve appends; the write-ahead file is read
// first (see audit.ReadDurable).
func (g *globalOptions) verifyAuditLog(head string) (audit.Summary, error) {
	d, err := audit.ReadDurable(g.auditPath())
	if err != nil {
		return audit.Summary{}, err
	}
	f, err := g.openAuditFile()
	if err != nil {
		return audit.Summary{}, err
	}
	defer f.Close()
	s, err := audit.VerifyDurable(f, head, d)
	if err != nil {
		return s, fmt.Errorf("%s: %w", g.auditPath(), err)
	}
	return s, nil
}

// pendingRecovery says what the next open of the store repairs.
func pendingRecovery(s audit.Summary) string {
	var did []string
	if s.Pending > 0 {
		did = append(did, fmt.Sprintf("%s in %s%s continue the chain past the log's end (made durable, not yet in %s)", plural(s.Pending, "record"), audit.FileName, ".wal", audit.FileName))
	}
	if s.Torn > 0 {
		did = append(did, fmt.Sprintf("the last line (%d bytes) is unfinished, past what was made durable", s.Torn))
	}
	return strings.Join(did, "; ") + "; the next toolhost command that opens the store puts the log right and records it"
}

func newAuditListCmd(g *globalOptions) *cobra.Command {
	var (
		asJSON bool
		since  time.Duration
		tool   string
	)
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "Show audit records, oldest first",
		Example: "  toolhost audit list --since 1h\n  toolhost audit list --tool delete_note --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since < 0 {
				return usagef("--since %s: give a positive duration such as 30m or 24h", since)
			}
			filter := audit.Filter{Tool: tool}
			if since > 0 {
				filter.Since = time.Now().Add(-since)
			}
			recs, err := audit.RecentFile(g.auditPath(), filter)
			if err != nil {
				return fmt.Errorf("%s: %w", g.auditPath(), err)
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetEscapeHTML(false)
				for _, r := range recs {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			if len(recs) == 0 {
				fmt.Fprintln(g.stdout, "no audit records")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tWHAT\tDECISION\tBY\tOUTCOME")
			for _, r := range recs {
				what, decision, by, outcome := r.Tool, r.Decision, r.DecidedBy, r.Outcome
				if r.Kind == audit.KindChange {
					what, decision, by, outcome = r.Action+" "+r.Subject, "-", r.Actor, r.Detail
				} else {
					what += " (" + r.Entry + ")"
				}
				// terminalSafe: a tool name comes from a URL, a reason
				// from whoever decided; neither may write to the terminal.
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Local().Format("2006-01-02 15:04:05"), terminalSafe(r.Kind),
					terminalSafe(what), terminalSafe(orDash(decision)), terminalSafe(orDash(by)), terminalSafe(orDash(outcome)))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the records as they are in the log (JSON lines)")
	cmd.Flags().DurationVar(&since, "since", 0, "only records from the last DURATION (e.g. 30m, 24h)")
	cmd.Flags().StringVar(&tool, "tool", "", "only calls of this tool")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newAuditVerifyCmd(g *globalOptions) *cobra.Command {
	var head string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every record and the chain; exit 3 naming the first bad record",
		Long: `Checks that every record is intact (its hash matches its content) and that the
chain is whole (seq counts up by one, each prev is the hash of the record
before). Exit 0: intact. Exit 3: the first bad record is named (changed,
deleted, inserted or reordered records all break the chain there). Records
cut from the end below what toolhost made durable are caught with the
write-ahead file beside the log (audit.jsonl.wal), which records how far that
was; records cut from the end above it, or a log and write-ahead file both
cut or rewritten, leave a shorter chain that is still whole: pass --head with
a hash you kept from ` + "`toolhost audit head`" + ` to catch that too. Records that a
crash kept out of audit.jsonl but that the write-ahead file holds are not
damage: they are reported as pending recovery (exit 0), and the next command
that opens the store puts them back.`,
		Example: "  toolhost audit verify\n  toolhost audit verify --head \"$(cat ~/audit-head.txt)\"",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if head != "" {
				if _, err := hex.DecodeString(head); err != nil || len(head) != 64 {
					return usagef("--head must be 64 hex digits, the output of `toolhost audit head`; got %q", head)
				}
				head = strings.ToLower(head)
			}
			s, err := g.verifyAuditLog(head)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "audit log intact: %s, head %s\n", plural(int(s.Records), "record"), orDash(s.Head))
			if s.Pending > 0 || s.Torn > 0 {
				fmt.Fprintf(g.stdout, "pending recovery (a crash, or a write in progress; not damage): %s\n", pendingRecovery(s))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&head, "head", "", "a head hash kept elsewhere: the log must contain it")
	return cmd
}

func newAuditHeadCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:     "head",
		Short:   "Verify the log and print the hash of its last record, to keep somewhere else",
		Example: "  toolhost audit head > ~/audit-head.txt",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The head of a log that does not verify is worth nothing.
			s, err := g.verifyAuditLog("")
			if err != nil {
				return err
			}
			if s.Pending > 0 {
				// The log's last record is not the head: the write-ahead
				// file holds records after it.
				return fmt.Errorf("the audit log is not whole yet: %s; run a toolhost command that opens the store (toolhost plugin list), then ask again", pendingRecovery(s))
			}
			if s.Records == 0 {
				return errors.New("the audit log is empty: nothing has been recorded yet")
			}
			fmt.Fprintln(g.stdout, s.Head)
			return nil
		},
	}
}
