"""judges/_slot.py: the question's relation words pick the reference sentence and the slot the answer must fill."""

from __future__ import annotations

from judges._slot import NO_SLOT, relation, restated, slot

BEOWULF = [
    "Beowulf is a 2007 British-American epic fantasy film directed by Robert Zemeckis and written by Neil Gaiman "
    "and Roger Avary."
]
CEREMONY = [
    'The ceremony was chaired by Isabelle Mergault. "Tell No One" won the award for Best Film. Written by Canet '
    "and Philippe Lefebvre and starring François Cluzet, the film won four categories."
]


def test_the_relation_is_next_to_the_asking_wh_word_not_a_relative_one() -> None:
    assert relation("Who chaired the ceremony in which the film won?") == ("chaired", "ceremony")
    assert relation("Beowulf, a 2007 film, directed by who?") == ("directed", "film")
    assert relation("Abraham Weinberg was a suspect in the killing of which Irish-American hitman?") == (
        "irish",
        "american",
    )
    assert relation("Milhouse, who Matt Groening named after who?") == ("named", "groening")


def test_a_name_of_the_right_sentence_in_another_role_contradicts_the_slot() -> None:
    question = "Beowulf, a 2007 epic fantasy film, directed by who?"
    swapped = slot(question, "Neil Gaiman", BEOWULF)
    assert swapped.entity_consistency == 0.0
    assert (swapped.answer_says, swapped.reference_says) == ("Neil Gaiman", "Robert Zemeckis")
    assert slot(question, "Robert Zemeckis", BEOWULF) == NO_SLOT


def test_an_answer_absent_from_the_slot_sentence_is_not_called_a_swap() -> None:
    # In a two-hop question the right answer is often the other hop's name: absence proves nothing here.
    question = "Who chaired the ceremony in which the film written by Canet won the award for Best Film?"
    assert slot(question, "François Cluzet", CEREMONY).entity_consistency == 1.0
    assert slot(question, "Cluzet starred in the film.", CEREMONY).entity_consistency == 1.0  # no relation stated


def test_an_answer_that_states_the_relation_with_another_name_contradicts_the_slot() -> None:
    # 2.2.0: the answer says itself which name fills the slot ("chaired by"), so its absence from the slot
    # sentence is no longer a two-hop excuse.
    question = "Who chaired the ceremony in which the film written by Canet won the award for Best Film?"
    swapped = slot(question, "The ceremony was chaired by François Cluzet.", CEREMONY)
    assert swapped.entity_consistency == 0.0
    assert (swapped.answer_says, swapped.reference_says) == ("François Cluzet", "Isabelle Mergault")
    assert slot(question, "The ceremony was chaired by Isabelle Mergault.", CEREMONY) == NO_SLOT
    assert restated(question, "Isabelle Mergault chaired it.", "The ceremony was chaired by Isabelle Mergault.") is None


def test_a_restated_name_far_from_the_relation_says_nothing_about_the_slot() -> None:
    question = "Who chaired the ceremony?"
    sentence = "The ceremony was chaired by Isabelle Mergault."
    far = "It was chaired, after a long and difficult public debate, by Jean Dupont."
    assert restated(question, far, sentence) is None  # "Jean Dupont" is more than MARGIN words from "chaired"
    assert restated(question, "It was chaired by Jean Dupont.", sentence) == ("Jean Dupont", "Isabelle Mergault")
    assert restated(question, "It was chaired by Jean Dupont.", "") is None  # no slot sentence


def test_names_of_one_list_share_a_role() -> None:
    facts = ["It helped the careers of young performers including Paul Lynde, Ronny Graham and Carol Lawrence."]
    assert slot("It helped the career of which young performer?", "Carol Lawrence", facts) == NO_SLOT


def test_by_who_asks_for_the_name_after_the_relation() -> None:
    facts = ["It Takes a Village is a book published in 1996 by Hillary Rodham Clinton and read by many."]
    assert slot("This 1996 book was published by who?", "Hillary Rodham Clinton", facts) == NO_SLOT


def test_the_subject_of_the_slot_sentence_fills_its_slot() -> None:
    facts = ["Kamal Shalorus is an Iranian mixed martial artist competing in the Lightweight division of ONE FC."]
    assert slot("Which Lightweight division mixed martial artist founded it?", "Kamal Shalorus", facts) == NO_SLOT


def test_picking_the_option_whose_sentence_lacks_the_relation_contradicts_it() -> None:
    facts = [
        "Memphis International Airport is an airport southeast of Memphis in Shelby County, Tennessee. "
        "Southwest Georgia Regional Airport is an airport in Albany, Georgia."
    ]
    question = (
        "In between Memphis International Airport and Southwest Georgia Regional Airport which one is in Tennessee?"
    )
    wrong = slot(question, "Southwest Georgia Regional Airport is located in Tennessee.", facts)
    assert wrong.entity_consistency == 0.0
    assert slot(question, "Memphis International Airport", facts) == NO_SLOT
    # a comparison both sentences state ("born first") is computed, not read off one sentence
    assert (
        slot("Who was born first, Memphis International or Southwest Georgia?", "Southwest Georgia", facts) == NO_SLOT
    )


def test_a_number_the_references_contradict_is_named_with_the_reference_number() -> None:
    facts = ["The town was founded in 1852 by settlers. It had 1,200 inhabitants in 2010."]
    wrong = slot("When was the town founded?", "It was founded in 1850.", facts)
    assert (wrong.quantity_consistency, wrong.answer_says, wrong.reference_says) == (0.0, "1850", "1852")
    assert slot("How many inhabitants did the town have in 2010?", "one thousand two hundred", facts) == NO_SLOT
    assert slot("When was the town founded?", "In 1852.", facts) == NO_SLOT
