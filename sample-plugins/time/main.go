// Command time is a toolhost sample plugin: clock and timezone tools.
//
// It is built as a WASI reactor (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared);
// each tool is a //go:wasmexport function that reads the tool arguments (a JSON
// object) as its Extism input and writes a JSON object as its Extism output.
// Errors are reported with pdk.SetError and a non-zero return value.
//
// The IANA time zone database is embedded (time/tzdata): the sandbox grants no
// file system, so the guest cannot read /usr/share/zoneinfo.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	_ "time/tzdata"

	"github.com/extism/go-pdk"

	"github.com/toolhost/toolhost/sample-plugins/internal/guest"
)

// maxZoneLen mirrors maxLength in plugin.json; the host validates arguments
// first, this is defence in depth.
const maxZoneLen = 64

// timeResult is the output of both tools.
type timeResult struct {
	Timezone     string `json:"timezone"`
	Datetime     string `json:"datetime"`   // RFC 3339 with the zone's offset
	UTCOffset    string `json:"utc_offset"` // "+01:00"
	Abbreviation string `json:"abbreviation"`
	IsDST        bool   `json:"is_dst"`
	Weekday      string `json:"weekday"`
	Unix         int64  `json:"unix"`
}

type getCurrentTimeArgs struct {
	Timezone *string `json:"timezone"`
}

type convertTimeArgs struct {
	Time       *string `json:"time"`
	ToTimezone *string `json:"to_timezone"`
}

//go:wasmexport get_current_time
func getCurrentTime() int32 {
	var args getCurrentTimeArgs
	if err := guest.DecodeArgs(pdk.Input(), &args); err != nil {
		return guest.Fail(err)
	}
	name := "UTC"
	if args.Timezone != nil {
		name = *args.Timezone
	}
	loc, err := loadZone(name)
	if err != nil {
		return guest.Fail(err)
	}
	return guest.Succeed(describe(time.Now(), loc, name))
}

//go:wasmexport convert_time
func convertTime() int32 {
	var args convertTimeArgs
	if err := guest.DecodeArgs(pdk.Input(), &args); err != nil {
		return guest.Fail(err)
	}
	if args.Time == nil {
		return guest.Fail(errors.New(`missing required argument "time": an RFC 3339 timestamp such as 2026-11-21T23:40:00Z`))
	}
	if args.ToTimezone == nil {
		return guest.Fail(errors.New(`missing required argument "to_timezone": an IANA name such as Europe/Paris`))
	}
	t, err := time.Parse(time.RFC3339, *args.Time)
	if err != nil {
		return guest.Fail(fmt.Errorf("invalid time %q: use RFC 3339 such as 2026-11-21T23:40:00Z or 2026-11-21T23:40:00+01:00", guest.Clip(*args.Time)))
	}
	loc, err := loadZone(*args.ToTimezone)
	if err != nil {
		return guest.Fail(err)
	}
	return guest.Succeed(describe(t, loc, *args.ToTimezone))
}

// commonZones are parsed before the first call, in init: toolhost takes
// each fresh instance from a snapshot of the module right after it started
// (its runtime and package init), so they are ready on every call, while a
// zone parsed during a call is parsed again by the next fresh instance —
// on toolhost's bench, parsing Europe/Paris was ~120 µs of a fresh call's
// p50 (383 → 261 µs once preloaded). They cover the zones most asked for;
// others still work, parsed on demand.
var commonZones = []string{
	"UTC", "Europe/London", "Europe/Paris", "Europe/Berlin", "Europe/Madrid", "Europe/Rome",
	"Europe/Amsterdam", "Europe/Stockholm", "Europe/Warsaw", "Europe/Kyiv", "Europe/Istanbul", "Europe/Moscow",
	"America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles", "America/Toronto",
	"America/Mexico_City", "America/Bogota", "America/Lima", "America/Sao_Paulo", "America/Argentina/Buenos_Aires",
	"Asia/Tokyo", "Asia/Seoul", "Asia/Shanghai", "Asia/Hong_Kong", "Asia/Singapore", "Asia/Jakarta",
	"Asia/Manila", "Asia/Bangkok", "Asia/Kolkata", "Asia/Karachi", "Asia/Dhaka", "Asia/Dubai", "Asia/Tehran",
	"Africa/Cairo", "Africa/Lagos", "Africa/Nairobi", "Africa/Johannesburg",
	"Australia/Sydney", "Australia/Melbourne", "Australia/Perth", "Pacific/Auckland", "Pacific/Honolulu",
}

// preloaded holds commonZones; it is filled in init and only read after.
var preloaded = map[string]*time.Location{}

func init() {
	for _, name := range commonZones {
		if loc, err := time.LoadLocation(name); err == nil {
			preloaded[name] = loc
		}
	}
	// The tools' own path once, on fixed values, for the runtime's lazy
	// caches (encoding/json's per-type codecs, the formatter's tables):
	// they are then part of the snapshot too.
	var args getCurrentTimeArgs
	_ = guest.DecodeArgs([]byte(`{"timezone":"UTC"}`), &args)
	var conv convertTimeArgs
	_ = guest.DecodeArgs([]byte(`{"time":"2026-01-02T03:04:05Z","to_timezone":"UTC"}`), &conv)
	t, _ := time.Parse(time.RFC3339, "2026-01-02T03:04:05Z")
	_, _ = json.Marshal(describe(t, time.UTC, "UTC"))
}

// zoneCache keeps the other zones parsed from the embedded database for the
// life of the instance (with reuse_instances, or within one call). It is
// bounded so a long-lived instance cannot grow it without limit.
var zoneCache = map[string]*time.Location{}

const maxCachedZones = 32

// loadZone resolves an IANA zone name from the embedded database only.
func loadZone(name string) (*time.Location, error) {
	if loc, ok := preloaded[name]; ok {
		return loc, nil
	}
	if loc, ok := zoneCache[name]; ok {
		return loc, nil
	}
	// "" and "Local" are accepted by time.LoadLocation but are not IANA names.
	if name == "" || name == "Local" || len(name) > maxZoneLen {
		return nil, unknownZone(name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, unknownZone(name)
	}
	if len(zoneCache) >= maxCachedZones {
		clear(zoneCache)
	}
	zoneCache[name] = loc
	return loc, nil
}

func unknownZone(name string) error {
	return fmt.Errorf("unknown timezone %q: use an IANA name such as Europe/Paris", guest.Clip(name))
}

func describe(t time.Time, loc *time.Location, name string) timeResult {
	t = t.In(loc).Truncate(time.Second)
	abbr, offset := t.Zone()
	return timeResult{
		Timezone:     name,
		Datetime:     t.Format(time.RFC3339),
		UTCOffset:    formatOffset(offset),
		Abbreviation: abbr,
		IsDST:        t.IsDST(),
		Weekday:      t.Weekday().String(),
		Unix:         t.Unix(),
	}
}

func formatOffset(seconds int) string {
	sign := byte('+')
	if seconds < 0 {
		sign = '-'
		seconds = -seconds
	}
	minutes := seconds / 60
	return fmt.Sprintf("%c%02d:%02d", sign, minutes/60, minutes%60)
}

func main() {}
