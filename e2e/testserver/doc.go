// Package testserver builds the Tributary server binary and runs it as a child process for
// tests: Build compiles ./cmd/server once per call, Start launches a Server on a free loopback
// port and a data directory, and the Server can be stopped (SIGTERM), killed (SIGKILL) and
// restarted on the same port and data. Every process is stopped by t.Cleanup, and the tail of
// its log (stderr) is printed when the test failed.
package testserver
