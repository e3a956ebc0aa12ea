module github.com/NVIDIA/go-nvml

go 1.20

require github.com/google/uuid v1.6.0
