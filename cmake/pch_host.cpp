// The executable that owns the -fPIE precompiled <torch/torch.h> reused by
// every test, example and benchmark (cmake/TntPrecompiledHeaders.cmake).
int main() { return 0; }
