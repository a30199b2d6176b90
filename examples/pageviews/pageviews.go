// Package pageviews is the windowed example: page views per user per
// hour, with 5 minutes of grace for records that arrive out of order, and
// one final count per user and hour, written exactly once when the hour
// closes. Views later than that are rejected with reason "late".
//
// Input: records keyed by user, JSON values {"user", "page", "at"} with
// the event time "at" in milliseconds since the Unix epoch. Output: keys
// encoded by topology.WindowedCodec(serde.String()) (the user, then the
// hour's start and end as 8-byte big-endian milliseconds), values the
// count as 8 bytes big-endian (serde.Int64).
package pageviews

import (
	"time"

	"github.com/onceflow/onceflow/serde"
	"github.com/onceflow/onceflow/topology"
)

// View is one page view.
type View struct {
	User string `json:"user"`
	Page string `json:"page"`
	At   int64  `json:"at"` // event time, milliseconds since the Unix epoch
}

// The windows of the example.
const (
	Window = time.Hour
	Grace  = 5 * time.Minute
)

// Store is the window store's name (its changelog is
// "<app-id>-views-per-user-hour-changelog").
const Store = "views-per-user-hour"

// KeyCodec reads the output's keys.
func KeyCodec() serde.Codec[topology.Windowed[string]] { return topology.WindowedCodec(serde.String()) }

// Topology counts views per user per hour from input to output.
func Topology(input, output string) *topology.Topology {
	t := topology.New("pageviews")
	views := topology.Source(t, input, serde.String(), serde.JSON[View]())
	timed := topology.WithTimestamp(views, func(_ string, v View) time.Time { return time.UnixMilli(v.At) })
	hourly := topology.GroupByKey(timed, "views-by-user", serde.String(), serde.JSON[View]()).
		WindowedBy(topology.TumblingWindows(Window).WithGrace(Grace)).
		EmitFinal().
		Count(Store)
	topology.To(hourly, output, KeyCodec(), serde.Int64())
	return t
}
