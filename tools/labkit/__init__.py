"""labkit: the Python behind `tools/lab` (run it through tools/lab, which puts tools/ on the path
and checks for python3 first). Python 3.10 standard library only.

    paths       the repository root and every build folder
    text        terminal text: its width, and wrapping that never cuts a word
    system      the Debian packages (tools/packages.txt), installing them, root and ownership
    labs        the tree's labs, found once
    build       configuring and building with CMake
    testrun     running tests (ctest, or one GoogleTest test per process) and reading the result
    grading     the grade: the chapter's table of points and hints, grading labs, the test to fix first
    reports     a grade shown and written: the terminal table, results.json (and its check), JUnit XML
    patches     unified diffs, read and applied without `patch`
    mutants     the mutant catalogue (solutions/NN-name/mutants/*.patch), built and run
    check       the instructor's commands `mutants` and `check`
    release     the student edition (`release`) and the Gradescope bundle (`autograder`)
    bench, watch   the commands of the same names
    cli         the command line
"""
