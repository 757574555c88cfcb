//go:build !cgo

package dist

import "errors"

// mpiComm is absent from a build without cgo: the MPI shim is C.
type mpiComm struct {
	Comm
	library string
}

func openMPI(Place) (*mpiComm, error) {
	return nil, errors.New("this gorstar was built without cgo (CGO_ENABLED=0): no MPI; rebuild with cgo for multi-rank runs")
}

func (*mpiComm) finalize() error { return nil }
func (*mpiComm) abort(int)       {}
