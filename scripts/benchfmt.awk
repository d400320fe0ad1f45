# Turns `go test -bench` output of test/bench into one line per row:
#   BENCH <module>/<row> p50_us=… p99_us=… calls_per_s=… allocs_per_call=…
#   (toolhost-http rows add server_cpu_us: the server's and its workers' CPU
#   time per call)
#   BENCH echo/outside-check extism_calls_per_s=… http_calls_per_s=… ratio=…
#   BENCH cold-start plugins=20 ms=…   (and first-call-after-restart, rss)
# With -count N each figure is the median of the N runs. Skipped rows print
# their reason (run go test with -v); of the rest only what looks like a
# failure passes, as "#" lines.
function row(name) {
	sub(/^Benchmark(Rows\/)?/, "", name)
	sub(/-[0-9]+$/, "", name)
	return name
}
function add(name, unit, v) {
	if (!(name in seen)) { seen[name] = 1; order[++rows] = name }
	n[name, unit]++
	vals[name, unit, n[name, unit]] = v
}
# median of the values recorded for name and unit ("" when none).
function med(name, unit,    k, i, j, t, a) {
	k = n[name, unit]
	if (k == 0) return ""
	for (i = 1; i <= k; i++) a[i] = vals[name, unit, i] + 0
	for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j] < a[j-1]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return a[int((k + 1) / 2)]
}
# num prints a figure with three significant digits, whole numbers from 100;
# "-" for a figure the row does not report.
function num(v) { return v == "" ? "-" : v >= 100 ? sprintf("%.0f", v) : sprintf("%.3g", v) }
/^Benchmark(Rows\/|Startup)/ && NF > 2 {
	name = row($1)
	for (i = 3; i < NF; i += 2) add(name, $(i+1), $i)
	next
}
# With -v a skipped row's reason comes just before its SKIP line.
/_test\.go:[0-9]+: n\/a: / { reason = $0; sub(/^.*n\/a: /, "", reason); next }
/--- SKIP: BenchmarkRows\// {
	name = row($3)
	if (!(name in seen)) { seen[name] = 1; order[++rows] = name; skip[name] = reason }
	reason = ""
	next
}
/^(--- FAIL|FAIL|panic:)/ || (/_test\.go:[0-9]+:/ && !/n\/a: /) { print "# " $0 }
END {
	for (r = 1; r <= rows; r++) {
		name = order[r]
		if (name in skip) {
			printf "BENCH %s n/a (%s)\n", name, skip[name]
		} else if (name ~ /outside-check/) {
			printf "BENCH %s extism_calls_per_s=%.0f http_calls_per_s=%.0f ratio=%.2f\n", name, med(name, "extism_calls/s"), med(name, "http_calls/s"), med(name, "ratio")
		} else if (name == "Startup") {
			printf "BENCH cold-start plugins=%d ms=%.1f\n", med(name, "plugins"), med(name, "cold_start_ms")
			printf "BENCH first-call-after-restart ms=%.1f\n", med(name, "first_call_ms")
			printf "BENCH rss plugins=%d mib=%.1f\n", med(name, "plugins"), med(name, "rss_mib")
		} else {
			e = med(name, "errors")
			c = med(name, "server_cpu_us")
			printf "BENCH %s p50_us=%s p99_us=%s calls_per_s=%.0f allocs_per_call=%d%s%s\n", name, num(med(name, "p50_us")), num(med(name, "p99_us")), med(name, "calls/s"), med(name, "allocs/op"), (c != "" ? " server_cpu_us=" num(c) : ""), (e > 0 ? " errors=" e : "")
		}
	}
}
