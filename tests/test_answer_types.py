from rag.reader.answer_types import answer_type, asks_price, type_match


def test_answer_type_reads_question_wording():
    assert answer_type("How often does the sync run?") == "time"
    assert answer_type("When does the old API stop working?") == "date"
    assert answer_type("How many guests can I invite?") == "number"
    assert answer_type("Why did the uploads fail?") == "cause"
    assert answer_type("Where is the summit held?") == "place"
    assert answer_type("Can I export a board?") == ""


def test_type_match_ignores_figure_the_question_already_states():
    q = "How many seats does the v1 plan include?"
    assert type_match("The v1 plan is deprecated.", "number", q) == 0.0
    assert type_match("The v1 plan includes 5 seats.", "number", q) == 1.0
    assert type_match("It keeps working until 14 November 2026.", "date", "When does it stop?") == 1.0
    assert type_match("It keeps working for now.", "date", "When does it stop?") == 0.0


def test_answer_type_reads_lead_time_and_type_nouns():
    assert answer_type("How far ahead must we book the hall?") == "time"
    assert answer_type("Which days is the depot open?") == "date"
    assert asks_price("What does a day ticket cost?", "number")
    assert not asks_price(
        "Which costs can volunteers claim?", answer_type("Which costs can volunteers claim?")
    )


def test_how_to_question_asks_for_a_procedure_not_an_amount():
    assert answer_type("How can I change the number of workers while it runs?") == ""
    assert answer_type("How many workers can I run?") == "number"


def test_default_questions_and_statements_are_read_from_wording():
    from rag.reader.answer_types import asks_default, states_default

    assert asks_default("Which worker class is used by default?")
    assert asks_default("What is the default value of max_fields?")
    assert not asks_default("Which worker classes are there?")
    assert states_default("**Default:** `30`")
    assert states_default("By default this value is 100.")
    assert not states_default("Set it to 100 for larger headers.")


def test_which_option_or_variable_asks_for_a_name_in_code():
    assert answer_type("Which environment variable turns the widget cache off?") == "code"
    assert answer_type("What flag makes the server quiet?") == "code"
    assert answer_type("Which config key sets the widget colour?") == "code"
    assert answer_type("What does the widget do?") == ""
    assert answer_type("What is the key difference between widgets and gadgets?") == ""
    assert answer_type("What class of users may edit widgets?") == ""
    assert answer_type("Which widget size is the largest?") == "number"  # an amount is asked first


def test_a_code_answer_names_a_new_literal_and_calls_it_the_asked_kind_of_thing():
    q = "Which environment variable turns the widget cache off?"
    assert type_match("Set the ``WIDGET_NO_CACHE`` environment variable to 1.", "code", q) == 1.0
    assert type_match("The variable is ``WIDGET_NO_CACHE``.", "code", q) == 1.0
    # a literal that is not called a variable, or a variable without a literal, is no answer
    assert type_match("Call ``widget.flush()`` to empty the cache.", "code", q) == 0.0
    assert type_match("An environment variable turns the cache off.", "code", q) == 0.0
    # the literal the question already names is not an answer to it
    q2 = "Which option does WIDGET_NO_CACHE replace?"
    assert type_match("The ``WIDGET_NO_CACHE`` option is new.", "code", q2) == 0.0


def test_a_code_answer_may_show_its_kind_by_form_instead_of_naming_it():
    assert type_match("Pass ``--no-cache`` to skip it.", "code", "Which flag turns the cache off?") == 1.0
    assert type_match("Pass ``cache`` to skip it.", "code", "Which flag turns the cache off?") == 0.0
    assert type_match("Run ``widgetd serve`` to start it.", "code", "Which command starts the server?") == 1.0
    assert type_match("Set ``WIDGET_SECRET`` first.", "code", "Which variable holds the secret?") == 1.0
    assert type_match("Set ``WIDGET_SECRET`` first.", "code", "Which flag holds the secret?") == 0.0


def test_a_rest_link_is_not_a_code_answer_and_a_slash_command_is_a_command():
    q = "Which command creates a widget?"
    assert (
        type_match("The ``widgetd`` command is built with `Click`_.", "code", "Which command uses Click?")
        == 1.0
    )
    assert type_match("It is a `Click`_ command line tool.", "code", "Which command uses widgets?") == 0.0
    assert type_match("Type `/widget new Blue` in the message box.", "code", q) == 1.0


def test_answer_type_follows_the_wh_phrase_when_several_kinds_are_worded():
    # the asked thing comes first; a kind worded later in the question only describes it
    assert answer_type("Which setting limits the number of open files?") == "code"
    assert answer_type("Which flag sets the maximum size of an upload?") == "code"
    assert answer_type("How many retries happen before the option gives up?") == "number"
    assert answer_type("What is the maximum number of workers?") == "number"


def test_answer_type_reads_versions_in_the_plural_as_numbers():
    assert answer_type("Which versions of the plugin are affected?") == "number"
    assert answer_type("Which version added the flag?") == "number"


def test_defaults_another_names_a_default_of_a_thing_the_question_leaves_out():
    from rag.reader.defaults import defaults_another

    asked = {"latex", "engin", "sphinx"}
    assert defaults_another("Since Sphinx 2.0, the default typeface is GNU FreeFont.", asked)
    assert not defaults_another("The default engine is pdflatex.", asked)
    assert not defaults_another("It defaults to pdflatex.", asked)  # names no thing: may be the asked one
    assert not defaults_another("The default typeface is FreeFont; the engine is pdflatex by default.", asked)
