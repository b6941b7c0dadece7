module github.com/lockproxy/lockproxy

go 1.26.0

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/yuin/gopher-lua v1.1.2
	go.uber.org/goleak v1.3.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/kr/text v0.2.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
