//go:build race

package host_test

// raceEnabled: the race detector's shadow memory makes a worker of this
// test binary several times larger (a deep recursion: ~450 MiB against
// ~190 without it).
const raceEnabled = true
