module sockdiag/bench/go

go 1.19
