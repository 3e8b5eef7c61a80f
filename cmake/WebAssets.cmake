# The dashboard's pages (src/ui/web): npm packages installed from package-lock.json (`npm ci`, once
# per lock; scripts/setup.sh runs it first), the app bundled with esbuild, and the built files
# embedded in the `cohort` binary as a generated web_assets.cc (cmake/EmbedFiles.cmake) added to
# `target`. Nothing generated is kept in the source tree but node_modules (ignored by git).
function(cohort_web_assets target)
  set(web ${PROJECT_SOURCE_DIR}/src/ui/web)
  set(out ${PROJECT_BINARY_DIR}/src/ui/web)
  find_program(COHORT_NPM npm)
  if(NOT COHORT_NPM)
    message(FATAL_ERROR "npm is needed to build the dashboard's pages (src/ui/web); "
      "scripts/setup.sh installs node and npm")
  endif()
  set(stamp ${web}/node_modules/.cohort-installed-lock.json)
  add_custom_command(OUTPUT ${out}/npm-ci.stamp
    COMMAND sh -c "cmp -s package-lock.json ${stamp} || { npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json ${stamp}; }"
    COMMAND ${CMAKE_COMMAND} -E touch ${out}/npm-ci.stamp
    WORKING_DIRECTORY ${web}
    DEPENDS ${web}/package.json ${web}/package-lock.json
    COMMENT "npm ci in src/ui/web (the dashboard's packages)"
    VERBATIM)
  file(GLOB sources CONFIGURE_DEPENDS ${web}/src/*)
  add_custom_command(OUTPUT ${out}/app.js ${out}/app.css
    COMMAND ${web}/node_modules/.bin/esbuild ${web}/src/app.js --bundle --minify
      --format=iife --target=es2020 --log-level=warning --outfile=${out}/app.js
    DEPENDS ${sources} ${out}/npm-ci.stamp
    COMMENT "esbuild: the dashboard's pages"
    VERBATIM)
  set(assets "/index.html|text/html|${web}/src/index.html,/assets/app.js|text/javascript|${out}/app.js,/assets/app.css|text/css|${out}/app.css")
  add_custom_command(OUTPUT ${out}/web_assets.cc
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${out}/web_assets.cc -DASSETS=${assets}
      -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake
    DEPENDS ${out}/app.js ${out}/app.css ${web}/src/index.html
      ${PROJECT_SOURCE_DIR}/cmake/EmbedFiles.cmake
    COMMENT "embedding the dashboard's pages"
    VERBATIM)
  target_sources(${target} PRIVATE ${out}/web_assets.cc)
endfunction()
