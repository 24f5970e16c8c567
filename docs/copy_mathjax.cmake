# Copies the parts of Debian's MathJax 2 (libjs-mathjax) that the book uses into the HTML output,
# so the formulas render from disk on any machine, with no network and no CDN.
#   cmake -DMATHJAX_DIR=/usr/share/javascript/mathjax -DOUTPUT_DIR=<html>/mathjax -P copy_mathjax.cmake
# The book's pages use TeX input (tex2jax, the AMS extensions) and SVG output with the TeX font,
# whose glyphs are JavaScript files: no web fonts are needed; AssistiveMML (with toMathML)
# adds each formula as hidden MathML text, for find-in-page, copying and screen readers. Everything else (other output
# processors and fonts, MathML and AsciiMath input, other languages, tests) is left out.
foreach(var MATHJAX_DIR OUTPUT_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "copy_mathjax.cmake: pass -D${var}=...")
  endif()
endforeach()
if(NOT EXISTS "${MATHJAX_DIR}/MathJax.js")
  message(FATAL_ERROR "copy_mathjax.cmake: ${MATHJAX_DIR}/MathJax.js not found "
                      "(install Debian's libjs-mathjax)")
endif()

set(pa_mathjax_parts
  MathJax.js
  extensions/tex2jax.js
  extensions/MathEvents.js
  extensions/MathMenu.js
  extensions/MathZoom.js
  extensions/HelpDialog.js
  extensions/AssistiveMML.js
  extensions/toMathML.js
  extensions/TeX
  jax/input/TeX
  jax/element/mml
  jax/output/SVG/config.js
  jax/output/SVG/jax.js
  jax/output/SVG/autoload
  jax/output/SVG/fonts/TeX
  localization/en)

file(REMOVE_RECURSE "${OUTPUT_DIR}")
foreach(part IN LISTS pa_mathjax_parts)
  if(NOT EXISTS "${MATHJAX_DIR}/${part}")
    message(FATAL_ERROR "copy_mathjax.cmake: ${MATHJAX_DIR}/${part} is missing")
  endif()
  get_filename_component(parent "${OUTPUT_DIR}/${part}" DIRECTORY)
  # FOLLOW_SYMLINK_CHAIN: Debian may link files to other packages; the copy must hold real files.
  file(COPY "${MATHJAX_DIR}/${part}" DESTINATION "${parent}" FOLLOW_SYMLINK_CHAIN)
endforeach()
