// Command etcd is the upstream etcd server, built from the go.etcd.io/etcd/server/v3 module
// pinned in go.mod beside this file (see hack/cluster/build.sh). Same body as
// go.etcd.io/etcd/server/v3/main.go.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
