# The Python package's component (scikit-build-core installs it into the wheel's platlib): the
# runtime library under its soname beside the package's modules, and the program in tiletune/bin.
# A wheel holds no symbolic links, so the library goes in once, as the file its soname names. Both
# keep their build-tree run paths (the CUDA toolkit's NVRTC where it was found); where NVRTC lives
# elsewhere (PyTorch's nvidia wheels) the package preloads it before the library.
install(FILES $<TARGET_FILE:tiletune_runtime> DESTINATION tiletune
        RENAME libtiletune_runtime.so.${PROJECT_VERSION_MAJOR} COMPONENT python)
install(PROGRAMS $<TARGET_FILE:tiletune> DESTINATION tiletune/bin COMPONENT python)
