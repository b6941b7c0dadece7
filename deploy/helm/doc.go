// Package helm holds no code: its test lints the Helm chart in
// deploy/helm/lockproxy with Helm's own Go module, renders it with the
// default values and with others, and runs lockproxy's configuration
// checks (those of check-config) over the lockproxy.yaml each rendering
// gives. The chart and its test live apart from the proxy's packages so
// that Helm's dependencies are compiled for this test alone.
package helm
