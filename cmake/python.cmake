# The Python package's component (scikit-build-core installs it into the wheel's platlib): the
# runtime library under its soname beside the package's modules, and the program in tiletune/bin.
# A wheel holds no symbolic links, so the library goes in once, as the file its soname names. NVRTC
# is opened at run time (where PyTorch's nvidia wheels have it, the package loads theirs first).
install(FILES $<TARGET_FILE:tiletune_runtime> DESTINATION tiletune
        RENAME libtiletune_runtime.so.${PROJECT_VERSION_MAJOR} COMPONENT python)
install(PROGRAMS $<TARGET_FILE:tiletune> DESTINATION tiletune/bin COMPONENT python)
