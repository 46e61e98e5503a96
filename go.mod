module github.com/ruvllm/ruvllm

go 1.26
