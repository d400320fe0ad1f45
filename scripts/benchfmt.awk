# Turns `go test -bench` output of test/bench into one line per row:
#   BENCH <module>/<row> p50_us=… p99_us=… calls_per_s=… allocs_per_call=…
#   BENCH cold-start plugins=20 ms=…   (and first-call-after-restart, rss)
# Skipped rows print their reason (run go test with -v); of the rest only
# what looks like a failure passes, as "#" lines.
function row(name) {
	sub(/^BenchmarkRows\//, "", name)
	sub(/-[0-9]+$/, "", name)
	return name
}
/^BenchmarkRows\// && NF > 2 {
	name = row($1)
	delete m
	for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
	printf "BENCH %s p50_us=%s p99_us=%s calls_per_s=%.0f allocs_per_call=%s\n", name, m["p50_us"], m["p99_us"], m["calls/s"], m["allocs/op"]
	next
}
/^BenchmarkStartup/ && NF > 2 {
	delete m
	for (i = 3; i < NF; i += 2) m[$(i+1)] = $i
	printf "BENCH cold-start plugins=%s ms=%s\n", m["plugins"], m["cold_start_ms"]
	printf "BENCH first-call-after-restart ms=%s\n", m["first_call_ms"]
	printf "BENCH rss plugins=%s mib=%s\n", m["plugins"], m["rss_mib"]
	next
}
# With -v a skipped row's reason comes just before its SKIP line.
/_test\.go:[0-9]+: n\/a: / { reason = $0; sub(/^.*n\/a: /, "", reason); next }
/--- SKIP: BenchmarkRows\// { printf "BENCH %s n/a (%s)\n", row($3), reason; reason = ""; next }
/^(--- FAIL|FAIL|panic:|ok )/ || /_test\.go:[0-9]+:/ { print "# " $0 }
