//go:build tools

// Package tools pins what gen.sh runs: controller-gen (sigs.k8s.io/controller-tools), and the
// hive API package it reads hive's CRDs from.
package tools

import (
	_ "github.com/openshift/hive/apis/hive/v1"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
