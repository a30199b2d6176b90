package topics

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteList prints topics as a table: name, partitions, replication, and
// whose internal topic it is.
func WriteList(w io.Writer, ts []Topic) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICATION\tINTERNAL")
	for _, t := range ts {
		internal := t.Internal
		if internal == "" {
			internal = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", t.Name, t.Partitions, t.Replication, internal)
	}
	return tw.Flush()
}

// WriteText prints the description: a summary line, the partitions as a
// table, then the configs that are not Kafka's defaults.
func (d Description) WriteText(w io.Writer) error {
	internal := ""
	if d.Internal != "" {
		internal = ", internal: " + d.Internal
	}
	fmt.Fprintf(w, "topic %s: %d partitions, replication %d%s\n", d.Name, d.Partitions, d.Replication, internal)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tREPLICAS\tISR\tSTART\tEND")
	for _, p := range d.PartitionDetails {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%d\t%d\n", p.ID, p.Leader, ids(p.Replicas), ids(p.ISR), p.Start, p.End)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Configs) == 0 {
		_, err := fmt.Fprintln(w, "configs: all defaults")
		return err
	}
	fmt.Fprintln(w, "configs (not defaults):")
	for _, c := range d.Configs {
		fmt.Fprintf(w, "  %s=%s (%s)\n", c.Name, c.Value, c.Source)
	}
	return nil
}

func ids(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
