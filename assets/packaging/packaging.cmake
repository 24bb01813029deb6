# Install rules for the shipped data (built-in models, task suites, font link), the desktop entry and icon, and the
# CPack setup for the Debian package. Included from the top-level CMakeLists.txt; the programs' own install rules are
# in app/CMakeLists.txt. Layout under the prefix: bin/dyllm{,-studio}, share/dyllm-studio/{models,tasks,fonts}/,
# share/applications/dyllm-studio.desktop, share/icons/hicolor/{scalable,256x256}/apps/dyllm-studio.{svg,png}.
set(_pkg ${CMAKE_CURRENT_LIST_DIR})
set(_assets ${PROJECT_SOURCE_DIR}/assets)

install(DIRECTORY ${_assets}/models/ DESTINATION ${DYLLM_INSTALL_DATADIR}/models)
install(DIRECTORY ${_assets}/tasks/ DESTINATION ${DYLLM_INSTALL_DATADIR}/tasks FILES_MATCHING PATTERN "*.jsonl")

# The studio's UI font: a link to Debian's fonts-dejavu-core file rather than a copy (Debian policy: no embedded
# fonts; nothing third-party is vendored here). Where that file is missing the link dangles, the lookup skips it and
# the studio falls back to ImGui's built-in font.
set(DYLLM_FONT_TARGET /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf)
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/packaging/fonts)
file(CREATE_LINK ${DYLLM_FONT_TARGET} ${PROJECT_BINARY_DIR}/packaging/fonts/DejaVuSans.ttf SYMBOLIC)
install(FILES ${PROJECT_BINARY_DIR}/packaging/fonts/DejaVuSans.ttf DESTINATION ${DYLLM_INSTALL_DATADIR}/fonts)

if(TARGET dyllm-studio)
    install(FILES ${_pkg}/dyllm-studio.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
    install(FILES ${_pkg}/dyllm-studio.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
    install(FILES ${_pkg}/dyllm-studio.png DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/256x256/apps)
endif()

# ---- CPack: `cpack -G DEB` in the build folder -> dyllm-studio_<version>_<arch>.deb ----------------------------
# The package is CPU-only: a DYLLM_CUDA=ON build links libcudart/libcublas/libcupti from the CUDA toolkit, which no
# Debian package provides, so neither dpkg-shlibdeps nor a CPU-only machine could satisfy it. cpack refuses a DEB
# from such a build (cpack_project_config.cmake.in) and says to configure with -DDYLLM_CUDA=OFF.
set(CPACK_PACKAGE_NAME dyllm-studio)
set(CPACK_PACKAGE_VENDOR "dyllm-studio developers")
set(CPACK_PACKAGE_CONTACT "dyllm-studio developers <maintainers@dyllm-studio.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "visualizer and profiler for masked diffusion language models (DyLLM)")
string(CONCAT CPACK_PACKAGE_DESCRIPTION   # one string: set() with several would make a ';'-list
    "dyllm-studio runs masked diffusion language models (LLaDA, Dream and two built-in tiny models) step by step\n"
    "with DyLLM's salient-token acceleration and shows per-layer cosine histograms, salient maps, the unmasking\n"
    "order and op timings live. The dyllm command line does the same work headless (generate, bench, eval, trace).\n"
    "This build is CPU-only.")
set(CPACK_GENERATOR DEB)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)                  # Depends: from the linked libraries (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS fonts-dejavu-core)  # the UI font; ImGui's built-in one otherwise
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "xvfb, xauth")        # headless --screenshot under xvfb-run
configure_file(${_pkg}/cpack_project_config.cmake.in ${PROJECT_BINARY_DIR}/cpack_project_config.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/cpack_project_config.cmake)
include(CPack)
